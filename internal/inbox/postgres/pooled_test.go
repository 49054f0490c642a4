package postgres_test

import (
	"net/url"
	"testing"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/inboxtest"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// The inbox contract holds through PgBouncer in transaction mode, which
// lends each transaction whichever server connection is free: the Store
// is opened on the pooler's URL and nothing more.
func TestInboxThroughTransactionPooler(t *testing.T) {
	t.Parallel()
	b := pgtest.NewBouncer(t, pgtest.Transaction)
	inboxtest.Exercise(t, func(t *testing.T, clock *inboxtest.Clock) inbox.Store {
		return open(t, b.URL(t, pgtest.New(t)), clock)
	})
}

// Several nodes share one database through PgBouncer in transaction mode
// as they do directly.
func TestNodesThroughTransactionPooler(t *testing.T) {
	t.Parallel()
	b := pgtest.NewBouncer(t, pgtest.Transaction)
	inboxtest.ExerciseNodes(t, func(t *testing.T, clock *inboxtest.Clock) func() inbox.Store {
		url := b.URL(t, pgtest.New(t))
		return func() inbox.Store { return open(t, url, clock) }
	})
}

// The lead works through PgBouncer in transaction mode: a lease row, which
// no session holds; the leader's Close hands it on.
func TestLeadThroughTransactionPooler(t *testing.T) {
	t.Parallel()
	b := pgtest.NewBouncer(t, pgtest.Transaction)
	url := b.URL(t, pgtest.New(t))
	a, c := open(t, url, nil), open(t, url, nil)
	for range 5 {
		if held, err := a.Lead(t.Context()); err != nil || !held {
			t.Fatalf("a.Lead() = %v, %v; want the lead", held, err)
		}
		if held, err := c.Lead(t.Context()); err != nil || held {
			t.Fatalf("c.Lead() = %v, %v while a leads", held, err)
		}
	}
	closeWithin(t, "a", a.Close)
	if held, err := c.Lead(t.Context()); err != nil || !held {
		t.Fatalf("c.Lead() = %v, %v after a closed; want the lead", held, err)
	}
}

// The statement modes a pooler may need, chosen in the URL, each keep the
// inbox contract: exec (no statement is described apart from its run) and
// simple_protocol (no extended protocol at all).
func TestInboxInEveryPooledExecMode(t *testing.T) {
	t.Parallel()
	b := pgtest.NewBouncer(t, pgtest.Transaction)
	for _, mode := range []string{"exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			inboxtest.Exercise(t, func(t *testing.T, clock *inboxtest.Clock) inbox.Store {
				u, err := url.Parse(b.URL(t, pgtest.New(t)))
				if err != nil {
					t.Fatal(err)
				}
				q := u.Query()
				q.Set("default_query_exec_mode", mode)
				u.RawQuery = q.Encode()
				return open(t, u.String(), clock)
			})
		})
	}
}

// Open tells a pooler from a direct connection by itself. Directly, its
// statements are prepared once per connection and the lead is a session
// lock; through PgBouncer (in session mode too, where the test can read
// the server session's prepared statements) nothing is prepared by name
// and the lead is the lease row.
func TestOpenTellsAPoolerFromADirectConnection(t *testing.T) {
	t.Parallel()
	b := pgtest.NewBouncer(t, pgtest.Session)
	for _, c := range []struct {
		name           string
		url            func(db string) string
		prepared, rows bool
	}{
		{"direct", func(db string) string { return db }, true, false},
		{"through PgBouncer", func(db string) string { return b.URL(t, db) }, false, true},
	} {
		db := pgtest.New(t)
		s := open(t, c.url(db), nil)
		if held, err := s.Lead(t.Context()); err != nil || !held {
			t.Fatalf("%s: Lead() = %v, %v; want the lead", c.name, held, err)
		}
		conn, err := s.Pool().Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(t.Context(), "SELECT $1::int", 1); err != nil {
			t.Fatal(err)
		}
		var named int
		err = conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_prepared_statements WHERE from_sql = false").Scan(&named)
		conn.Release()
		if err != nil {
			t.Fatal(err)
		}
		if (named > 0) != c.prepared {
			t.Errorf("%s: %d statements prepared by name on the session, want some: %v", c.name, named, c.prepared)
		}
		var leases int
		if err := s.Pool().QueryRow(t.Context(), "SELECT count(*) FROM inbox_leader").Scan(&leases); err != nil {
			t.Fatal(err)
		}
		if (leases == 1) != c.rows {
			t.Errorf("%s: %d lease rows, want a lease: %v", c.name, leases, c.rows)
		}
	}
}
