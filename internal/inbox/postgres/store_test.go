package postgres_test

import (
	"errors"
	"testing"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/inboxtest"
	"github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// open opens a store on url that reads time from clock.
func open(t testing.TB, url string, clock *inboxtest.Clock) *postgres.Store {
	t.Helper()
	var opts postgres.Options
	if clock != nil {
		opts.Now = clock.Now
	}
	s, err := postgres.Open(t.Context(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestInbox(t *testing.T) {
	t.Parallel()
	inboxtest.Exercise(t, func(t *testing.T, clock *inboxtest.Clock) inbox.Store {
		return open(t, pgtest.New(t), clock)
	})
}

func TestNodes(t *testing.T) {
	t.Parallel()
	inboxtest.ExerciseNodes(t, func(t *testing.T, clock *inboxtest.Clock) func() inbox.Store {
		url := pgtest.New(t)
		return func() inbox.Store { return open(t, url, clock) }
	})
}

// TestAcceptRepeatedHash: a batch that carries one hash twice is the
// caller's mistake, reported as such, and writes nothing.
func TestAcceptRepeatedHash(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.New(t), nil)
	_, err := s.Accept(t.Context(), []inbox.Item{testItem("a"), testItem("b"), testItem("a")})
	if !errors.Is(err, postgres.ErrRepeatedHash) || errors.Is(err, dedupe.ErrUnavailable) {
		t.Fatalf("Accept of a repeated hash: %v, want ErrRepeatedHash only", err)
	}
	if evs, err := s.List(t.Context(), inbox.Filter{}); err != nil || len(evs) != 0 {
		t.Errorf("stored %v, %v; want nothing", evs, err)
	}
}
