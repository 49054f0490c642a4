package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// A node watching the inbox wakes when another node's Accept stores new
// events (not when a batch stores none), and keeps watching after its
// listening session is cut, waking once as it resumes.
func TestWatch(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	a, b := open(t, url, nil), open(t, url, nil)
	db := dbName(t, url)
	conn := admin(t)
	listening := func() bool {
		var n int
		err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = $1 AND query = 'LISTEN hookgate_stored'`, db).Scan(&n)
		return err == nil && n == 1
	}

	wakes := make(chan struct{}, 16)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.Watch(ctx, func() { wakes <- struct{}{} }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	waitFor(t, "b to listen", listening)

	accept := func(items ...inbox.Item) {
		t.Helper()
		if _, err := a.Accept(t.Context(), items); err != nil {
			t.Fatal(err)
		}
	}
	woken := func(what string) {
		t.Helper()
		select {
		case <-wakes:
		case <-time.After(10 * time.Second):
			t.Fatalf("no wake after %s", what)
		}
	}
	accept(testItem("one"), testItem("two"))
	woken("a batch that stored events")

	accept(testItem("one"))
	select {
	case <-wakes:
		t.Fatal("woken by a batch of duplicates only")
	case <-time.After(200 * time.Millisecond):
	}

	tag, err := conn.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = $1 AND query = 'LISTEN hookgate_stored'`, db)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("cut the listening session: %v (%d)", err, tag.RowsAffected())
	}
	woken("the listening session was cut")
	waitFor(t, "b to listen again", listening)
	accept(testItem("three"))
	woken("a batch after the session came back")
}
