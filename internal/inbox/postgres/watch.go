package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/internal/inbox"
)

var _ inbox.Watcher = (*Store)(nil)

// storedChannel is the channel Accept notifies, once per batch that stored
// new events, when the batch commits.
const storedChannel = "hookgate_stored"

// watchRetry bounds the wait before a lost listening session is opened
// again.
const watchRetry = 5 * time.Second

// Watch implements inbox.Watcher: a session of its own (Options.Session),
// outside the pool, listens on storedChannel. When that session is lost
// it is opened again, and wake is called once then, for what was stored
// in between. Without a Session it returns at once: LISTEN through a
// transaction pooler hears nothing, and the workers poll.
func (s *Store) Watch(ctx context.Context, wake func()) error {
	if s.session == nil {
		return nil
	}
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		if s.listen(ctx, wake) {
			delay = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, watchRetry)
		wake()
	}
	return nil
}

// listen holds one listening session until it fails or ctx ends, calling
// wake for each notification. It reports whether the session was opened.
func (s *Store) listen(ctx context.Context, wake func()) bool {
	conn, err := pgx.ConnectConfig(ctx, s.session.Copy())
	if err != nil {
		return false
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+storedChannel); err != nil {
		return false
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return true
		}
		wake()
	}
}
