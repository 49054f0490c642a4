package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// listener is the pid of a session of db listening for new events, 0
// when none is.
func listener(t *testing.T, conn *pgx.Conn, db string) int32 {
	t.Helper()
	var pid int32
	if err := conn.QueryRow(t.Context(), `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
		WHERE datname = $1 AND query = 'LISTEN hookgate_stored'`, db).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// watch runs s.Watch until t ends; each wake sends on the channel it
// returns.
func watch(t *testing.T, s *postgres.Store) chan struct{} {
	t.Helper()
	wakes := make(chan struct{}, 16)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Watch(ctx, func() { wakes <- struct{}{} }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	return wakes
}

// A node watching the inbox wakes when another node's Accept stores new
// events (not when a batch stores none), and keeps watching after its
// listening session is cut, waking once as it resumes.
func TestWatch(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	a, b := open(t, url, nil), open(t, url, nil)
	db := dbName(t, url)
	conn := admin(t)
	wakes := watch(t, b)
	waitFor(t, "b to listen", func() bool { return listener(t, conn, db) != 0 })

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

	old := listener(t, conn, db)
	var cut bool
	if err := conn.QueryRow(t.Context(), `SELECT pg_terminate_backend($1)`, old).Scan(&cut); err != nil || !cut {
		t.Fatalf("cut the listening session %d: %v", old, err)
	}
	woken("the listening session was cut")
	// The cut session may linger in pg_stat_activity while it ends: wait
	// for the new one.
	waitFor(t, "b to listen again", func() bool { p := listener(t, conn, db); return p != 0 && p != old })
	accept(testItem("three"))
	woken("a batch after the session came back")
}

// A node's own Accept wakes its watcher before it returns, and once: the
// notification the database then delivers for that batch wakes it no
// more, since its workers were already woken for those events. Through a
// pooler, without a session of its own, Watch listens nowhere (a LISTEN
// there hears nothing, and the workers poll), but still wakes for the
// node's own Accepts.
func TestWatchOwnAccepts(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	for name, url := range map[string]string{"direct": url, "pooler": pgtest.NewBouncer(t, pgtest.Transaction).URL(t, url)} {
		t.Run(name, func(t *testing.T) {
			s := open(t, url, nil)
			wakes := watch(t, s)
			if name == "direct" {
				conn := admin(t)
				waitFor(t, "the store to listen", func() bool { return listener(t, conn, dbName(t, url)) != 0 })
			}
			// Accept wakes only once Watch has started: wait for the
			// first wake.
			deadline := time.Now().Add(10 * time.Second)
			for i := 0; ; i++ {
				if _, err := s.Accept(t.Context(), []inbox.Item{testItem(fmt.Sprintf("%s-first-%d", name, i))}); err != nil {
					t.Fatal(err)
				}
				if len(wakes) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("Watch started: no Accept woke it in 10 s")
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond)
			for len(wakes) > 0 {
				<-wakes
			}

			if _, err := s.Accept(t.Context(), []inbox.Item{testItem(name + "-one"), testItem(name + "-two")}); err != nil {
				t.Fatal(err)
			}
			if len(wakes) != 1 {
				t.Fatalf("%d wakes when Accept returned, want 1", len(wakes))
			}
			time.Sleep(300 * time.Millisecond)
			if n := len(wakes); n != 1 {
				t.Fatalf("%d wakes for one batch, want 1: the database's notification of the node's own batch woke it again", n)
			}
		})
	}
}
