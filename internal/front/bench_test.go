package front

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/redis/redistest"
)

// BenchmarkCheckDuplicate answers redeliveries of stored events from
// Redis, one event per Check or 100, and reports the time per event.
func BenchmarkCheckDuplicate(b *testing.B) {
	const stored = 10_000
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch%d", batch), func(b *testing.B) {
			client, prefix := redistest.New(b)
			f := node(b, client, prefix)
			ctx := b.Context()
			now := time.Now()
			hs := make([]dedupe.Hash, stored)
			committed := make([]Committed, stored)
			for i := range hs {
				hs[i] = hash(i)
				committed[i] = Committed{Hash: hs[i], FirstSeen: now, Expires: now.Add(time.Hour)}
			}
			for i := 0; i < stored; i += 1000 {
				if err := f.Commit(ctx, committed[i:i+1000]...); err != nil {
					b.Fatal(err)
				}
			}
			next, answered := 0, 0
			for b.Loop() {
				if next+batch > stored {
					next = 0
				}
				as := f.Check(ctx, hs[next:next+batch])
				if v := as[batch-1].Verdict; v != Duplicate {
					b.Fatalf("stored event %d = %s", next+batch-1, v)
				}
				next += batch
				answered += batch
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(answered), "ns/event")
		})
	}
}
