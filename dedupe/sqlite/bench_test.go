package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/sqlite"
)

// benchAccept claims and commits keys next, next+1, ... in one durable
// transaction, as the gateway does for one group commit.
func benchAccept(b *testing.B, s *sqlite.Store, tb *testBundle, next, n int) {
	ctx := b.Context()
	hs := make([]dedupe.Hash, n)
	for i := range hs {
		hs[i] = hash(next + i)
	}
	tx, err := tb.db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	ts := s.Tx(tx)
	rs, err := ts.Claim(ctx, lease, hs...)
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
	if err := ts.Commit(ctx, window, leases...); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// prefill is how many committed keys the benchmarks' table holds before
// they start, so that single and batched claims write into a table of the
// same size.
const prefill = 20_000

func benchStore(b *testing.B) (*sqlite.Store, *testBundle) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.db")
	db := openDB(b, path)
	s, err := sqlite.New(db, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tb := &testBundle{path: path, db: db}
	const chunk = 1000
	for next := -prefill; next < 0; next += chunk {
		benchAccept(b, s, tb, next, chunk)
	}
	return s, tb
}

// BenchmarkClaimSingle claims and commits one key per durable transaction.
func BenchmarkClaimSingle(b *testing.B) {
	s, tb := benchStore(b)
	next := 0
	for b.Loop() {
		benchAccept(b, s, tb, next, 1)
		next++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(next), "ns/key")
}

// BenchmarkClaimBatch100 claims and commits 100 keys per durable
// transaction.
func BenchmarkClaimBatch100(b *testing.B) {
	const batch = 100
	s, tb := benchStore(b)
	next := 0
	for b.Loop() {
		benchAccept(b, s, tb, next, batch)
		next += batch
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(next), "ns/key")
}
