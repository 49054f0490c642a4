package worker_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/worker"
)

// BenchmarkProcess takes an inbox of b.N events (100 entities, each event
// a newer version) through validation-free processing, entity apply and
// delivery to loopback destinations answering 204, and reports events/s:
// "once" with ProcessOnce in one goroutine, "run" with a pool of 4
// workers, one destination. "fan4" delivers each event to four
// destinations; "fan4-hanging" to the same three and one that never
// answers (each attempt ends at its 1s timeout; it pauses after 5 in a
// row, as configured destinations do by default). Their events/s count
// the events every healthy destination has, so the two compare what a
// hanging destination costs the others.
func BenchmarkProcess(b *testing.B) {
	b.Run("once", func(b *testing.B) {
		bench(b, 1, 1, false, func(ctx context.Context, p *worker.Pool, _ <-chan struct{}) {
			for done := 0; done < b.N; {
				r, err := p.ProcessOnce(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if r.Events == 0 {
					b.Fatalf("inbox ran dry after %d of %d events", done, b.N)
				}
				done += r.Events
			}
		})
	})
	b.Run("run", func(b *testing.B) { bench(b, 4, 1, false, run) })
	b.Run("fan4", func(b *testing.B) { bench(b, 4, 4, false, run) })
	b.Run("fan4-hanging", func(b *testing.B) { bench(b, 4, 3, true, run) })
}

// run runs the pool until every healthy destination has every event.
func run(ctx context.Context, p *worker.Pool, delivered <-chan struct{}) {
	ctx, cancel := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(ctx) }()
	<-delivered
	cancel()
	if err := <-runErr; err != nil {
		panic(err)
	}
}

// bench fills an inbox with b.N events and times process, which must
// return once the healthy destinations have had them all (delivered is
// closed then).
func bench(b *testing.B, workers, healthy int, hanging bool, process func(context.Context, *worker.Pool, <-chan struct{})) {
	var calls atomic.Int64
	delivered := make(chan struct{})
	total := int64(b.N * healthy)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == total {
			close(delivered)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer app.Close()
	stuck := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		// Reading the body to its end lets the server see the client
		// give up, which ends the request's context.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	defer stuck.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	store, err := sqlite.Open(filepath.Join(b.TempDir(), "hookgate.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	fill(b, store, b.N)
	var dests []worker.Destination
	for i := range healthy {
		dests = append(dests, worker.Destination{
			Destination: deliver.Destination{Name: fmt.Sprint("app", i), URL: app.URL, Timeout: 10 * time.Second},
			// Workers apply their batches concurrently, so an event may
			// find its entity already at a newer version: stale, and
			// delivered only to on: all destinations.
			On: worker.OnAll,
		})
	}
	if hanging {
		dests = append(dests, worker.Destination{
			Destination: deliver.Destination{Name: "stuck", URL: stuck.URL, Timeout: time.Second},
			On:          worker.OnAll, PauseAfter: 5,
		})
	}
	pool, err := worker.New(worker.Options{
		Store: store, Workers: workers, Batch: 200, Lease: time.Minute,
		Sources: map[string]worker.Source{"shop": {Name: "shop", Destinations: dests}},
		Client:  deliver.New(&http.Client{Transport: tr}),
		Idle:    time.Hour,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	process(ctx, pool, delivered)
	b.StopTimer()
	if got := calls.Load(); got != total {
		b.Fatalf("%d deliveries for %d events to %d destinations", got, b.N, healthy)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func fill(b *testing.B, store *sqlite.Store, n int) {
	b.Helper()
	const chunk = 500
	for start := 0; start < n; start += chunk {
		items := make([]inbox.Item, 0, chunk)
		for i := start; i < min(start+chunk, n); i++ {
			k := dedupe.Key{Tenant: "acme", Provider: "shopify", ObjectType: "order", Action: "updated", EventID: fmt.Sprint("evt_", i)}
			items = append(items, inbox.Item{Event: inbox.Event{
				Hash: k.Hash(), Scope: k.Scope(), Source: "shop", Provider: "shopify", Tenant: "acme", EventID: k.EventID,
				EntityType: "order", EntityID: fmt.Sprint("o", i%100), EntityOrder: int64(i + 1),
				EntityState: fmt.Sprint("s", i%3), Payload: []byte(`{"id":1,"state":"paid"}`),
			}, Window: 168 * time.Hour})
		}
		if _, err := store.Accept(context.Background(), items); err != nil {
			b.Fatal(err)
		}
	}
}
