package postgres

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookgate/hookgate/internal/inbox"
)

var _ inbox.Leader = (*Store)(nil)

// leaderLock is the key of the session advisory lock that the leading
// node holds ("hkgtlead").
const leaderLock = 0x686b67746c656164

// leader is a node's hold on the lead: a connection taken out of the pool
// whose session holds leaderLock. The lock lives as long as the session,
// so a node that dies (or loses its connection) gives the lead up at once
// and another node's next Lead takes it.
type leader struct {
	mu   sync.Mutex
	conn *pgxpool.Conn
}

// Lead implements inbox.Leader.
func (s *Store) Lead(ctx context.Context) (bool, error) {
	s.lead.mu.Lock()
	defer s.lead.mu.Unlock()
	if s.lead.conn != nil {
		// Still leading while the session that holds the lock answers.
		if _, err := s.lead.conn.Exec(ctx, "SELECT 1"); err == nil {
			return true, nil
		}
		s.lead.conn.Conn().Close(context.WithoutCancel(ctx))
		s.lead.conn.Release()
		s.lead.conn = nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, fail(ctx, "lead", err)
	}
	var held bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", int64(leaderLock)).Scan(&held); err != nil {
		conn.Release()
		return false, fail(ctx, "lead", err)
	}
	if !held {
		conn.Release()
		return false, nil
	}
	s.lead.conn = conn
	return true, nil
}

// resign gives the lead up by closing the session that holds it.
func (l *leader) resign() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.conn.Conn().Close(context.Background())
		l.conn.Release()
		l.conn = nil
	}
}
