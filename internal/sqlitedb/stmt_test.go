package sqlitedb

import (
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
)

func TestSizes(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for n := range 3 * MaxRows {
		sum := 0
		for _, k := range Sizes(n) {
			if k <= 0 || k > MaxRows || k&(k-1) != 0 {
				t.Fatalf("Sizes(%d) has %d, want a power of two up to %d", n, k, MaxRows)
			}
			sum += k
			seen[k] = true
		}
		if sum != n {
			t.Fatalf("Sizes(%d) adds up to %d", n, sum)
		}
	}
	if len(seen) != 9 {
		t.Errorf("%d distinct sizes, want 9", len(seen))
	}
}

// Chunks hands out every row once, in order, in chunks of Sizes' sizes,
// and can be ranged over again.
func TestChunks(t *testing.T) {
	t.Parallel()
	rows := make([]int, 2*MaxRows+37)
	for i := range rows {
		rows[i] = i
	}
	for range 2 {
		var got, sizes []int
		for c := range Chunks(rows) {
			got = append(got, c...)
			sizes = append(sizes, len(c))
		}
		if !slices.Equal(got, rows) || !slices.Equal(sizes, Sizes(len(rows))) {
			t.Fatalf("chunks of %d sizes %v, rows in order: %v; want sizes %v", len(sizes), sizes, slices.Equal(got, rows), Sizes(len(rows)))
		}
	}
}

// TestClaimStatementsPreparedOnce: claims of every batch size up to a few
// hundred keys, new and duplicate, prepare a bounded set of statements,
// not one per size.
func TestClaimStatementsPreparedOnce(t *testing.T) {
	t.Parallel()
	db, _ := open(t)
	if err := db.Migrate(t.Context(), KeyTable, KeySteps); err != nil {
		t.Fatal(err)
	}
	k := db.Keys(time.Now)
	next := 0
	for n := 1; n <= 300; n++ {
		hs := make([]dedupe.Hash, n)
		for i := range hs {
			hs[i] = hash(next + i)
		}
		next += n / 2 // half of each batch is new, half repeats the last batch
		err := db.Write(t.Context(), func(tx *sql.Tx) error {
			_, err := k.Claim(t.Context(), tx, time.Hour, true, hs)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	db.stmts.mu.Lock()
	n := len(db.stmts.m)
	db.stmts.mu.Unlock()
	if n > 2*9 {
		t.Fatalf("%d statements prepared for claims of 300 sizes, want at most 18 (9 sizes of the upsert and of the read)", n)
	}
}
