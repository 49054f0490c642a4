package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/internal/inbox"
)

var _ inbox.Leader = (*Store)(nil)

// leaderLock is the key of the session advisory lock that the leading
// node holds ("hkgtlead") when it has a session of its own.
const leaderLock = 0x686b67746c656164

// DefaultLeadFor is how long a lease on the lead lasts when
// Options.LeadFor is zero: twice the default sweep period, so that the
// leader, which renews it at each sweep, keeps it.
const DefaultLeadFor = 2 * time.Hour

// resignTimeout bounds the statement that gives a lease on the lead up.
const resignTimeout = 2 * time.Second

// leader is a node's hold on the lead, in one of two forms.
//
// With a session of its own (Options.Session), a connection outside the
// pool whose session holds leaderLock: the lock lives as long as the
// session, so a node that dies or loses its connection gives the lead up
// at once and another node's next Lead takes it.
//
// Without one, as through a transaction pooler, where a session lock
// would belong to whichever server connection the pooler lends: the
// one row of inbox_leader, naming the holder and the end of its lease.
// Each Lead renews it; another node takes it once it has lapsed, or at
// once after the holder's Close deleted it.
type leader struct {
	mu     sync.Mutex
	conn   *pgx.Conn
	holder string
}

// Lead implements inbox.Leader.
func (s *Store) Lead(ctx context.Context) (bool, error) {
	if s.session == nil {
		return s.leaseLead(ctx)
	}
	s.lead.mu.Lock()
	defer s.lead.mu.Unlock()
	if s.lead.conn != nil {
		// Still leading while the session that holds the lock answers.
		if _, err := s.lead.conn.Exec(ctx, "SELECT 1"); err == nil {
			return true, nil
		}
		s.lead.conn.Close(context.WithoutCancel(ctx))
		s.lead.conn = nil
	}
	conn, err := pgx.ConnectConfig(ctx, s.session.Copy())
	if err != nil {
		return false, inbox.Fail(ctx, "lead", err)
	}
	var held bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", int64(leaderLock)).Scan(&held); err != nil || !held {
		conn.Close(context.WithoutCancel(ctx))
		if err != nil {
			return false, inbox.Fail(ctx, "lead", err)
		}
		return false, nil
	}
	s.lead.conn = conn
	return true, nil
}

// leadQuery takes or renews the lease on the lead for $2 until the
// clock ($1) plus $3 microseconds: the row is written only when $2 holds
// it already or its lease has lapsed, and returned only when written.
const leadQuery = `
WITH clock AS (SELECT coalesce($1::timestamptz, now()) AS now)
INSERT INTO inbox_leader AS l (id, holder, until)
SELECT true, $2, clock.now + $3::bigint * interval '1 microsecond' FROM clock
ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, until = excluded.until
	WHERE l.holder = excluded.holder OR l.until < (SELECT now FROM clock)
RETURNING true`

func (s *Store) leaseLead(ctx context.Context) (bool, error) {
	var held bool
	err := s.pool.QueryRow(ctx, leadQuery, s.clock(), s.lead.holder, s.leadFor.Microseconds()).Scan(&held)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, inbox.Fail(ctx, "lead", err)
	}
	return held, nil
}

// resign gives the lead up: it closes the session that holds the lock,
// or deletes this node's lease, within resignTimeout.
func (s *Store) resign() {
	s.lead.mu.Lock()
	defer s.lead.mu.Unlock()
	if s.lead.conn != nil {
		s.lead.conn.Close(context.Background())
		s.lead.conn = nil
	}
	if s.session == nil {
		ctx, cancel := context.WithTimeout(context.Background(), resignTimeout)
		defer cancel()
		// A lease that cannot be deleted lapses at its end.
		_, _ = s.pool.Exec(ctx, `DELETE FROM inbox_leader WHERE holder = $1`, s.lead.holder)
	}
}

// holderName names a Store in inbox_leader: its host, its process and a
// random part, so that an operator can tell which node leads.
func holderName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), rand.Text()[:8])
}
