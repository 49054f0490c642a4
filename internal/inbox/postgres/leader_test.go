package postgres_test

import (
	"context"
	"testing"

	"github.com/hookgate/hookgate/internal/pgtest"
)

// One node leads at a time; the lead passes on when the leader closes,
// and when its session dies under it.
func TestLead(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	a, b, c := open(t, url, nil), open(t, url, nil), open(t, url, nil)
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

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
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
