package redis_test

import (
	"fmt"
	"testing"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/redis"
)

// prefill is how many committed keys the benchmark's prefix holds before
// it starts, so that single and batched claims work on a keyspace of the
// same size.
const prefill = 20_000

// benchStore returns a store on Redis's clock, as a node runs it, whose
// prefix holds prefill committed keys.
func benchStore(b *testing.B) *redis.Store {
	b.Helper()
	s := setup(b)
	const chunk = 1000
	for next := -prefill; next < 0; next += chunk {
		claimCommit(b, s, next, chunk)
	}
	return s
}

// claimCommit claims keys next to next+n-1, which must be new, and
// commits them, as a node does around one group commit.
func claimCommit(b *testing.B, s *redis.Store, next, n int) {
	ctx := b.Context()
	rs, err := s.Claim(ctx, lease, hashes(next, next+n)...)
	if err != nil {
		b.Fatal(err)
	}
	leases := make([]dedupe.Lease, n)
	for i, r := range rs {
		if r.Status != dedupe.New {
			b.Fatalf("fresh key %d = %s", next+i, r.Status)
		}
		leases[i] = r.Lease
	}
	if err := s.Commit(ctx, window, leases...); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkClaimCommit claims and commits new keys, one key per call or
// 100, and reports the time per key.
func BenchmarkClaimCommit(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch%d", batch), func(b *testing.B) {
			s := benchStore(b)
			next := 0
			for b.Loop() {
				claimCommit(b, s, next, batch)
				next += batch
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(next), "ns/key")
		})
	}
}

// BenchmarkDuplicate claims committed keys, one per call or 100, as a
// node does for a provider's retries, and reports the time per key.
func BenchmarkDuplicate(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch%d", batch), func(b *testing.B) {
			s := benchStore(b)
			ctx := b.Context()
			next, claimed := -prefill, 0
			for b.Loop() {
				if next+batch > 0 {
					next = -prefill
				}
				rs, err := s.Claim(ctx, lease, hashes(next, next+batch)...)
				if err != nil {
					b.Fatal(err)
				}
				if rs[batch-1].Status != dedupe.Duplicate {
					b.Fatalf("committed key %d = %s", next+batch-1, rs[batch-1].Status)
				}
				next += batch
				claimed += batch
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(claimed), "ns/key")
		})
	}
}
