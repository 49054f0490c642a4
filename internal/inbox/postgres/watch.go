package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

var _ inbox.Watcher = (*Store)(nil)

// storedChannel is the channel Accept notifies, once per batch that stored
// new events, when the batch commits. The payload is the Store's holder
// name, so that a node's Watch knows its own batches, which Accept has
// woken it for already.
const storedChannel = "hookgate_stored"

// watchRetry bounds the wait before a lost listening session is opened
// again.
const watchRetry = 5 * time.Second

// Watch implements inbox.Watcher. Accept calls wake itself once a batch
// of this Store's that stored new events commits, before it returns; a
// session of its own (Options.Session), outside the pool, listens on
// storedChannel for every other node's. When that session is lost it is
// opened again, and wake is called once then, for what was stored in
// between. Without a Session it listens nowhere: LISTEN through a
// transaction pooler hears nothing, and the workers poll for the other
// nodes' events.
func (s *Store) Watch(ctx context.Context, wake func()) error {
	mine := &wake
	s.wake.Store(mine)
	// A later Watch's wake, if one started meanwhile, stays.
	defer s.wake.CompareAndSwap(mine, nil)
	if s.session == nil {
		<-ctx.Done()
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
// wake for each notification of another Store's. It reports whether the
// session was opened.
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
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true
		}
		if n.Payload != s.lead.holder {
			wake()
		}
	}
}

// stored wakes Watch, if it runs, for a batch of this Store's that stored
// new events and has committed.
func (s *Store) stored(outs []inbox.Outcome) {
	wake := s.wake.Load()
	if wake == nil {
		return
	}
	for _, o := range outs {
		if o.Status == dedupe.New {
			(*wake)()
			return
		}
	}
}
