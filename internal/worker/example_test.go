package worker_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/worker"
)

// Two updates of one order in the same state: the destination that wants
// transitions hears of the first only; both events are processed.
func Example() {
	dir, err := os.MkdirTemp("", "worker")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(filepath.Join(dir, "hookgate.db"), sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("app:", r.Header.Get("X-Hookgate-Entity"), r.Header.Get("X-Hookgate-Transition"))
		w.WriteHeader(http.StatusNoContent)
	}))
	defer app.Close()

	pool, err := worker.New(worker.Options{
		Store: store,
		Sources: map[string]worker.Source{"shop": {Name: "shop", Destinations: []worker.Destination{{
			Destination: deliver.Destination{Name: "app", URL: app.URL, Timeout: 10 * time.Second},
			On:          worker.OnTransition,
		}}}},
		Client: deliver.New(app.Client()),
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	var items []inbox.Item
	for i := range 2 {
		k := dedupe.Key{Tenant: "acme", Provider: "shopify", ObjectType: "order", Action: "updated", EventID: fmt.Sprint("evt_", i+1)}
		items = append(items, inbox.Item{Event: inbox.Event{
			Hash: k.Hash(), Scope: k.Scope(), Source: "shop", Provider: "shopify", Tenant: "acme", EventID: k.EventID,
			EntityType: "order", EntityID: "o1", EntityOrder: int64(i + 1), EntityState: "pending", Payload: []byte(`{}`),
		}, Window: 168 * time.Hour})
	}
	out, err := store.Accept(ctx, items)
	if err != nil {
		log.Fatal(err)
	}
	r, err := pool.ProcessOnce(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leased:", r.Events, "delivered:", r.Deliveries)
	for _, o := range out {
		ev, err := store.Get(ctx, o.ID)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s, %s\n", ev.EventID, ev.Status, ev.Applied.Outcome)
	}
	// Output:
	// app: order/o1 ->pending
	// leased: 2 delivered: 1
	// evt_1: processed, applied
	// evt_2: processed, unchanged
}
