package postgres_test

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/pgtest"
)

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

// BenchmarkAccept accepts batches of new events, one statement each, on
// one goroutine (serial) and on as many as GOMAXPROCS (parallel, the
// committers of several nodes). events/s counts accepted events.
func BenchmarkAccept(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("serial/batch%d", batch), func(b *testing.B) {
			s := open(b, pgtest.New(b), nil)
			ctx := b.Context()
			n := 0
			for b.Loop() {
				if _, err := s.Accept(ctx, benchItems(fmt.Sprint("e", n, "-"), batch)); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(n*batch)/b.Elapsed().Seconds(), "events/s")
		})
		b.Run(fmt.Sprintf("parallel/batch%d", batch), func(b *testing.B) {
			s := open(b, pgtest.New(b), nil)
			ctx := b.Context()
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Accept(ctx, benchItems(fmt.Sprint("e", next.Add(1), "-"), batch)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(int(next.Load())*batch)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
