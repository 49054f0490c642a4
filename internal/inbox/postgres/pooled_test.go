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
