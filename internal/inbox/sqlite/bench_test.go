package sqlite_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
)

// benchStore opens a store on a fresh file.
func benchStore(b *testing.B) *sqlite.Store {
	b.Helper()
	s, err := sqlite.Open(filepath.Join(b.TempDir(), "inbox.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// benchItems returns n events named prefix0..prefixN, each about one of
// 100 charges, with a payload of a typical webhook's size.
func benchItems(prefix string, n int) []inbox.Item {
	payload := make([]byte, 1500)
	for i := range payload {
		payload[i] = 'x'
	}
	items := make([]inbox.Item, n)
	for i := range items {
		key := prefix + strconv.Itoa(i)
		k := dedupe.Key{Tenant: "acme", Provider: "stripe", ObjectType: "charge", Action: "updated", EventID: key}
		items[i] = inbox.Item{Event: inbox.Event{
			Hash: k.Hash(), Scope: k.Scope(), Source: "stripe", Provider: "stripe", Tenant: "acme", EventID: key,
			EntityType: "charge", EntityID: fmt.Sprint("ch_", i%100), EntityVersion: strconv.Itoa(i),
			EntityOrder: int64(i), EntityState: []string{"pending", "paid", "refunded"}[i%3],
			Payload: payload, Headers: map[string]string{"Content-Type": "application/json"},
		}, Window: 168 * time.Hour}
	}
	return items
}

// prefill accepts n events in batches of 500.
func prefill(b *testing.B, s *sqlite.Store, prefix string, n int) {
	b.Helper()
	items := benchItems(prefix, n)
	for lo := 0; lo < n; lo += 500 {
		if _, err := s.Accept(b.Context(), items[lo:min(lo+500, n)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProcessBatch is the store's share of one batch of 200 events
// with one destination: Lease, Apply, a Finish that opens a delivery per
// event, then the lane's Dispatch calls, each recording the 16 attempts
// the last one leased (a lane's default max_in_flight) and leasing the
// next 16. It reports events/s through the store alone.
func BenchmarkProcessBatch(b *testing.B) {
	const (
		batch    = 200
		inFlight = 16
	)
	s := benchStore(b)
	ctx := b.Context()
	prefill(b, s, "e", batch*(b.N+1))
	lane := inbox.Lane{Source: "stripe", Destination: "app"}
	b.ResetTimer()
	for range b.N {
		evs, err := s.Lease(ctx, "w", batch, time.Minute)
		if err != nil || len(evs) != batch {
			b.Fatalf("lease: %d events, %v", len(evs), err)
		}
		if _, err := s.Apply(ctx, evs); err != nil {
			b.Fatal(err)
		}
		results := make([]inbox.Result, len(evs))
		for i, e := range evs {
			results[i] = inbox.Result{ID: e.ID, Status: inbox.StatusProcessed, Destinations: []string{"app"}}
		}
		if err := s.Finish(ctx, "w", results); err != nil {
			b.Fatal(err)
		}
		var done []inbox.Done
		for delivered := 0; ; {
			out, err := s.Dispatch(ctx, "d", lane, done, inFlight, time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			delivered += len(out.Settled)
			if len(out.Tasks) == 0 {
				if delivered != batch {
					b.Fatalf("%d of %d events settled", delivered, batch)
				}
				break
			}
			done = done[:0]
			for _, t := range out.Tasks {
				done = append(done, inbox.Done{Status: inbox.DeliveryDelivered,
					Attempt: inbox.Attempt{EventID: t.Delivery.EventID, Destination: "app", Code: 204}})
			}
		}
	}
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkApplyFinish is BenchmarkProcessBatch without deliveries: the
// work every event costs however many destinations it has.
func BenchmarkApplyFinish(b *testing.B) {
	const batch = 200
	s := benchStore(b)
	ctx := b.Context()
	prefill(b, s, "e", batch*(b.N+1))
	b.ResetTimer()
	for range b.N {
		evs, err := s.Lease(ctx, "w", batch, time.Minute)
		if err != nil || len(evs) != batch {
			b.Fatalf("lease: %d events, %v", len(evs), err)
		}
		if _, err := s.Apply(ctx, evs); err != nil {
			b.Fatal(err)
		}
		results := make([]inbox.Result, len(evs))
		for i, e := range evs {
			results[i] = inbox.Result{ID: e.ID, Status: inbox.StatusProcessed}
		}
		if err := s.Finish(ctx, "w", results); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAccept500 is intake's transaction over a prefilled inbox: 500
// new events per Accept.
func BenchmarkAccept500(b *testing.B) {
	s := benchStore(b)
	prefill(b, s, "old", 20000)
	batches := make([][]inbox.Item, b.N)
	for i := range batches {
		batches[i] = benchItems(fmt.Sprint("b", i, "-"), 500)
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Accept(b.Context(), batches[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(500*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkStats reads the stats of an inbox of 20,000 events, half of
// them processed, as the metrics endpoint does on every scrape.
func BenchmarkStats(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	prefill(b, s, "e", 20000)
	evs, err := s.Lease(ctx, "w", 10000, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	results := make([]inbox.Result, len(evs))
	for i, e := range evs {
		results[i] = inbox.Result{ID: e.ID, Status: inbox.StatusProcessed}
	}
	if err := s.Finish(ctx, "w", results); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.Stats(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAccept accepts new events in batches of the sizes the committer
// forms under load (one per waiting request), each batch one durable
// transaction.
func BenchmarkAccept(b *testing.B) {
	for _, batch := range []int{1, 37, 64} {
		b.Run(fmt.Sprintf("batch%d", batch), func(b *testing.B) {
			s := benchStore(b)
			prefill(b, s, "old", 20_000)
			next := 0
			for b.Loop() {
				items := benchItems("e"+strconv.Itoa(next)+"-", batch)
				if _, err := s.Accept(b.Context(), items); err != nil {
					b.Fatal(err)
				}
				next++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(next*batch), "ns/event")
		})
	}
}
