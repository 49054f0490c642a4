package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/pgtest"
)

func migrateItem(id string) inbox.Item {
	k := dedupe.Key{Tenant: "acme", Provider: "shop", ObjectType: "event", Action: "any", EventID: id}
	return inbox.Item{Event: inbox.Event{Hash: k.Hash(), Scope: k.Scope(), Source: "shop", Provider: "standard",
		Tenant: "acme", EventID: id, Payload: []byte(`{}`)}, Window: time.Hour}
}

// Nodes of this version start against a database at every earlier version
// while a node of that version keeps accepting: each starts, every
// version is applied once, what was stored is still there, and the old
// node's accepts wait out the migration instead of failing.
func TestMigrateFromEveryVersion(t *testing.T) {
	t.Parallel()
	for from := 1; from < len(migrations); from++ {
		t.Run(fmt.Sprintf("from v%d", from), func(t *testing.T) {
			t.Parallel()
			url := pgtest.New(t)
			ctx := t.Context()
			oldPool, err := pgxpool.New(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer oldPool.Close()
			if err := migrateTo(ctx, oldPool, migrations[:from]); err != nil {
				t.Fatal(err)
			}
			old := &Store{pool: oldPool} // a node of version `from`, running
			if _, err := old.Accept(ctx, []inbox.Item{migrateItem("before")}); err != nil {
				t.Fatal(err)
			}

			stop := make(chan struct{})
			var accepted []string
			oldDone := make(chan error, 1)
			go func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						oldDone <- nil
						return
					default:
					}
					id := fmt.Sprintf("during_%d", i)
					if _, err := old.Accept(ctx, []inbox.Item{migrateItem(id)}); err != nil {
						oldDone <- fmt.Errorf("the old node's accept %s: %w", id, err)
						return
					}
					accepted = append(accepted, id)
				}
			}()
			var wg sync.WaitGroup
			stores := make([]*Store, 3)
			errs := make([]error, 3)
			for i := range stores {
				wg.Go(func() { stores[i], errs[i] = Open(ctx, url, Options{}) })
			}
			wg.Wait()
			close(stop)
			if err := <-oldDone; err != nil {
				t.Fatal(err)
			}
			for i, err := range errs {
				if err != nil {
					t.Fatalf("node %d of this version: %v", i, err)
				}
				defer stores[i].Close()
			}

			rows, err := oldPool.Query(ctx, `SELECT version FROM inbox_schema_migrations ORDER BY version`)
			if err != nil {
				t.Fatal(err)
			}
			versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
			if err != nil {
				t.Fatal(err)
			}
			want := make([]int32, len(migrations))
			for i := range want {
				want[i] = int32(i + 1)
			}
			if !slices.Equal(versions, want) {
				t.Fatalf("versions recorded %v, want %v each once", versions, want)
			}
			var indexes int
			if err := oldPool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE tablename = 'inbox_events'
				AND indexname IN ('inbox_events_tenant', 'inbox_events_event_id', 'inbox_events_hash', 'inbox_events_received', 'inbox_events_outcome')`).Scan(&indexes); err != nil {
				t.Fatal(err)
			}
			if indexes != 5 {
				t.Fatalf("%d of the 5 list indexes exist after the migration", indexes)
			}
			evs, err := stores[0].List(context.Background(), inbox.Filter{EventID: "before"})
			if err != nil || len(evs) != 1 {
				t.Fatalf("the event stored before the migration: %v, %v", evs, err)
			}
			st, err := stores[1].Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := st.Sources["shop"].Accepted, int64(1+len(accepted)); got != want {
				t.Fatalf("%d events accepted, want %d (one before, %d while the nodes started)", got, want, len(accepted))
			}
			t.Logf("the old node accepted %d events while three new nodes migrated", len(accepted))
		})
	}
}
