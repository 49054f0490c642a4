package worker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxpostgres "github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/internal/worker"
)

// On a shared inbox a node's idle workers wake as soon as another node
// stores an event: here they would otherwise poll once an hour.
func TestWorkersWakeOnAnotherNodesAccept(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	openPG := func() *inboxpostgres.Store {
		s, err := inboxpostgres.Open(t.Context(), url, inboxpostgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := openPG(), openPG()
	watched := &leaseSeen{Store: b, empty: make(chan struct{})}
	pool, err := worker.New(worker.Options{
		Store: watched, Workers: 1, Idle: time.Hour,
		Sources: map[string]worker.Source{"shop": {Name: "shop"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { pool.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// The listening session is idle after its LISTEN: the LISTEN has
	// committed, so the next NOTIFY reaches it (while it runs, a NOTIFY
	// is lost).
	waitFor(t, 10*time.Second, func() bool {
		var n int
		err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN %' AND state = 'idle'`).Scan(&n)
		return err == nil && n == 1
	})
	// The worker's first look found nothing: it is idle until woken.
	select {
	case <-watched.empty:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker never leased")
	}

	k := dedupe.Key{Provider: "test", EventID: "evt_wake"}
	out, err := a.Accept(t.Context(), []inbox.Item{{Event: inbox.Event{
		Hash: k.Hash(), Scope: k.Scope(), Source: "shop", Provider: "test", EventID: "evt_wake", Payload: []byte("{}"),
	}, Window: time.Hour}})
	if err != nil || out[0].Status != dedupe.New {
		t.Fatalf("accept on node a: %+v, %v", out, err)
	}
	waitFor(t, 10*time.Second, func() bool {
		ev, err := b.Get(t.Context(), out[0].ID)
		return err == nil && ev.Status == inbox.StatusProcessed
	})
}

// leaseSeen is a store that closes empty when a Lease first finds nothing.
type leaseSeen struct {
	*inboxpostgres.Store
	once  sync.Once
	empty chan struct{}
}

func (s *leaseSeen) Lease(ctx context.Context, owner string, n int, d time.Duration) ([]inbox.Event, error) {
	evs, err := s.Store.Lease(ctx, owner, n, d)
	if err == nil && len(evs) == 0 {
		s.once.Do(func() { close(s.empty) })
	}
	return evs, err
}
