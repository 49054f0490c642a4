package worker_test

import (
	"context"
	"fmt"
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
// one delivery to a loopback destination answering 204, and reports
// events/s: "once" with ProcessOnce in one goroutine, "run" with a pool of
// 4 workers.
func BenchmarkProcess(b *testing.B) {
	b.Run("once", func(b *testing.B) {
		bench(b, 1, func(ctx context.Context, p *worker.Pool, _ <-chan struct{}) {
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
	b.Run("run", func(b *testing.B) {
		bench(b, 4, func(ctx context.Context, p *worker.Pool, delivered <-chan struct{}) {
			ctx, cancel := context.WithCancel(ctx)
			runErr := make(chan error, 1)
			go func() { runErr <- p.Run(ctx) }()
			<-delivered
			cancel()
			if err := <-runErr; err != nil {
				b.Fatal(err)
			}
		})
	})
}

func bench(b *testing.B, workers int, process func(context.Context, *worker.Pool, <-chan struct{})) {
	var calls atomic.Int64
	delivered := make(chan struct{})
	total := int64(b.N)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == total {
			close(delivered)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer app.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	store, err := sqlite.Open(filepath.Join(b.TempDir(), "hookgate.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	fill(b, store, b.N)
	pool, err := worker.New(worker.Options{
		Store: store, Workers: workers, Batch: 200,
		Sources: map[string]worker.Source{"shop": {Name: "shop", Destinations: []worker.Destination{{
			Destination: deliver.Destination{Name: "app", URL: app.URL, Timeout: 10 * time.Second},
		}}}},
		Client: deliver.New(&http.Client{Transport: tr}),
		Idle:   time.Hour,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	process(ctx, pool, delivered)
	b.StopTimer()
	if got := calls.Load(); got != total {
		b.Fatalf("%d deliveries for %d events", got, total)
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
