package postgres_test

import (
	"fmt"
	"testing"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// prefill is how many committed keys the benchmark's table holds before it
// starts, so that single and batched claims write into a table of the same
// size.
const prefill = 20_000

// BenchmarkClaim claims new keys, one key per statement or 100, on the
// database's clock as a node does, and reports the time per key.
func BenchmarkClaim(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch%d", batch), func(b *testing.B) {
			ctx := b.Context()
			s, err := postgres.Open(ctx, pgtest.New(b), postgres.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			const chunk = 1000
			for next := -prefill; next < 0; next += chunk {
				rs, err := s.Claim(ctx, lease, hashes(next, next+chunk)...)
				if err != nil {
					b.Fatal(err)
				}
				leases := make([]dedupe.Lease, len(rs))
				for i, r := range rs {
					leases[i] = r.Lease
				}
				if err := s.Commit(ctx, window, leases...); err != nil {
					b.Fatal(err)
				}
			}

			next := 0
			for b.Loop() {
				rs, err := s.Claim(ctx, lease, hashes(next, next+batch)...)
				if err != nil {
					b.Fatal(err)
				}
				if rs[batch-1].Status != dedupe.New {
					b.Fatalf("fresh key %d = %s", next+batch-1, rs[batch-1].Status)
				}
				next += batch
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(next), "ns/key")
		})
	}
}
