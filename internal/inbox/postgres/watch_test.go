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
	// listener is the pid of the session listening, 0 when none is.
	listener := func() int32 {
		var pid int32
		if err := conn.QueryRow(t.Context(), `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
			WHERE datname = $1 AND query = 'LISTEN hookgate_stored'`, db).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		return pid
	}
	listening := func() bool { return listener() != 0 }

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

	old := listener()
	var cut bool
	if err := conn.QueryRow(t.Context(), `SELECT pg_terminate_backend($1)`, old).Scan(&cut); err != nil || !cut {
		t.Fatalf("cut the listening session %d: %v", old, err)
	}
	woken("the listening session was cut")
	// The cut session may linger in pg_stat_activity while it ends: wait
	// for the new one.
	waitFor(t, "b to listen again", func() bool { p := listener(); return p != 0 && p != old })
	accept(testItem("three"))
	woken("a batch after the session came back")
}

// Through a pooler, without a session of its own, Watch returns at once,
// listening nowhere: through a transaction pooler a LISTEN hears nothing,
// and the workers poll.
func TestWatchWithoutSession(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.NewBouncer(t, pgtest.Transaction).URL(t, pgtest.New(t)), nil)
	done := make(chan error, 1)
	go func() { done <- s.Watch(t.Context(), func() {}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch without a session still runs after 10s")
	}
}
