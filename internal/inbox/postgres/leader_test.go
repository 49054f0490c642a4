package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// With a session of its own, one node leads at a time by a session lock;
// the lead passes on when the leader closes, and when its session dies
// under it.
func TestLead(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	withSession := postgres.Options{Session: url}
	a, b, c := openWith(t, url, withSession), openWith(t, url, withSession), openWith(t, url, withSession)
	lead := func(name string, s interface {
		Lead(ctx context.Context) (bool, error)
	}, want bool) {
		t.Helper()
		got, err := s.Lead(t.Context())
		if err != nil || got != want {
			t.Fatalf("%s.Lead() = %v, %v; want %v", name, got, err, want)
		}
	}
	lead("a", a, true)
	lead("b", b, false)
	lead("a", a, true)
	lead("c", c, false)

	closeWithin(t, "a", a.Close)
	// The server frees the lock once a's session has ended, which is just
	// after Close returns.
	waitFor(t, "b to take the lead a gave up", func() bool {
		held, err := b.Lead(t.Context())
		return err == nil && held
	})
	lead("c", c, false)

	// b's session dies (a crash, a network cut): the lock goes with it.
	conn := admin(t)
	tag, err := conn.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = $1)`,
		dbName(t, url))
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("terminate the leader's session: %v (%d sessions)", err, tag.RowsAffected())
	}
	waitFor(t, "another node to take the lead", func() bool {
		held, err := c.Lead(t.Context())
		return err == nil && held
	})
	lead("b", b, false)
}

// closeWithin runs close, a store's or a pool's Close, in a goroutine and
// fails the test if it has not returned within seconds: a Close that never
// gives the lead's connection back blocks on the pool, and the test says
// so instead of hanging until the package's timeout.
func closeWithin(t testing.TB, name string, close func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s.Close: %v", name, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s.Close has not returned after 10s: it did not resign the lead", name)
	}
}

// TestCloseResignsTheLead: Close gives the lead up at once, on a store of
// its own pool and on one over the caller's pool, which stays open and
// would otherwise keep the lock's session alive: another node leads
// within seconds.
func TestCloseResignsTheLead(t *testing.T) {
	t.Parallel()
	// With a session the lead is a session lock (Open's own url, directly,
	// or Options.Session over the caller's pool); through a pooler without
	// one, a lease.
	for _, c := range []struct {
		own, session bool
	}{{true, true}, {false, true}, {true, false}, {false, false}} {
		url := pgtest.New(t)
		var opts postgres.Options
		switch {
		case !c.session:
			url = pgtest.NewBouncer(t, pgtest.Transaction).URL(t, url)
		case !c.own:
			opts.Session = url
		}
		var a *postgres.Store
		if c.own {
			var err error
			if a, err = postgres.Open(t.Context(), url, opts); err != nil {
				t.Fatal(err)
			}
		} else {
			pool, err := pgxpool.New(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { closeWithin(t, "the caller's pool", func() error { pool.Close(); return nil }) })
			if a, err = postgres.New(t.Context(), pool, opts); err != nil {
				t.Fatal(err)
			}
		}
		b := openWith(t, url, opts)
		if held, err := a.Lead(t.Context()); err != nil || !held {
			t.Fatalf("%+v: a.Lead() = %v, %v; want the lead", c, held, err)
		}
		if held, err := b.Lead(t.Context()); err != nil || held {
			t.Fatalf("%+v: b.Lead() = %v, %v while a leads", c, held, err)
		}
		closeWithin(t, "a", a.Close)
		waitFor(t, fmt.Sprintf("b to take the lead a closed on (%+v)", c), func() bool {
			held, err := b.Lead(t.Context())
			return err == nil && held
		})
	}
}

// Through a pooler, without a session of its own, the lead is a lease: the leader keeps it by renewing it within LeadFor, and
// another node takes it once it lapses, the old leader then following.
func TestLeaseLead(t *testing.T) {
	t.Parallel()
	url := pgtest.NewBouncer(t, pgtest.Transaction).URL(t, pgtest.New(t))
	clock := dedupetest.NewClock(time.Now())
	opts := postgres.Options{Now: clock.Now, LeadFor: time.Minute}
	a, b := openWith(t, url, opts), openWith(t, url, opts)
	lead := func(name string, s *postgres.Store, want bool) {
		t.Helper()
		if got, err := s.Lead(t.Context()); err != nil || got != want {
			t.Fatalf("%s.Lead() = %v, %v; want %v", name, got, err, want)
		}
	}
	lead("a", a, true)
	lead("b", b, false)
	for range 3 {
		clock.Advance(50 * time.Second)
		lead("a", a, true) // renewed within the minute
		lead("b", b, false)
	}
	clock.Advance(61 * time.Second)
	lead("b", b, true) // a's lease lapsed
	lead("a", a, false)
}
