package postgres_test

import (
	"encoding/json"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/postgres"
	"github.com/hookgate/hookgate/internal/testproc"
)

const (
	racers          = 3
	racerGoroutines = 4
	racedKeys       = 256
)

// claimSeen is one claim result a racer reports to the parent.
type claimSeen struct {
	Hash   dedupe.Hash
	Status dedupe.Status
	Token  dedupe.Token
}

// committed reports whether racers commit the key they win; the others keep
// their leases, so they must never come back Duplicate.
func committed(h dedupe.Hash) bool {
	return h[0]%2 == 0
}

// TestClaimRaceAcrossProcesses races claims of the same keys from several
// OS processes on one database, each with its own pool and several
// goroutines, committing what they win while the others still claim it:
// every key must be New exactly once across all of them, and no statement
// may fail (a deadlock between claims and commits would).
func TestClaimRaceAcrossProcesses(t *testing.T) {
	if c, ok := testproc.AsChild(t); ok {
		runRacer(t, c)
		return
	}
	t.Parallel()
	s, tb := setup(t)

	reports := testproc.Run(t, racers, tb.url)
	news := map[dedupe.Hash]dedupe.Token{}
	for i, data := range reports {
		var seen []claimSeen
		if err := json.Unmarshal(data, &seen); err != nil {
			t.Fatal(err)
		}
		if want := racerGoroutines * racedKeys; len(seen) != want {
			t.Fatalf("racer %d reported %d claims, want %d", i, len(seen), want)
		}
		won := 0
		for _, c := range seen {
			switch {
			case c.Status == dedupe.New:
				won++
				if _, dup := news[c.Hash]; dup {
					t.Errorf("key %s: New in two claims", c.Hash)
				}
				news[c.Hash] = c.Token
			case c.Status == dedupe.Duplicate && !committed(c.Hash):
				t.Errorf("key %s: Duplicate, but its winner never committed it", c.Hash)
			}
		}
		t.Logf("racer %d won %d of %d keys", i, won, racedKeys)
	}
	if len(news) != racedKeys {
		t.Fatalf("%d of %d keys were New somewhere, want all", len(news), racedKeys)
	}

	// The database agrees with the winners: committing their leases again,
	// and the held ones for the first time, finds each key under its
	// winner's token.
	leases := make([]dedupe.Lease, 0, len(news))
	for h, tok := range news {
		leases = append(leases, dedupe.Lease{Hash: h, Token: tok})
	}
	if err := s.Commit(t.Context(), window, leases...); err != nil {
		t.Fatalf("committing the winners' leases: %v", err)
	}
}

// runRacer is the body of one racer process: it opens the database on the
// database's clock, as a node does, waits to be released with the others,
// then claims every key from several goroutines in batches of random size
// and random order, committing the won keys that committed selects.
func runRacer(t *testing.T, c *testproc.Child) {
	s, err := postgres.Open(t.Context(), c.Arg, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c.Ready(t)
	n := uint64(c.Index)

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen []claimSeen
	)
	for g := range racerGoroutines {
		rng := rand.New(rand.NewPCG(n, uint64(g)))
		order := rng.Perm(racedKeys)
		wg.Go(func() {
			for len(order) > 0 {
				size := min(1+rng.IntN(16), len(order))
				batch := make([]dedupe.Hash, size)
				for i, k := range order[:size] {
					batch[i] = hash(k)
				}
				order = order[size:]
				results, err := s.Claim(t.Context(), lease, batch...)
				if err != nil {
					t.Error(err)
					return
				}
				var won []dedupe.Lease
				mu.Lock()
				for i, r := range results {
					seen = append(seen, claimSeen{Hash: batch[i], Status: r.Status, Token: r.Lease.Token})
					if r.Status == dedupe.New && committed(batch[i]) {
						won = append(won, r.Lease)
					}
				}
				mu.Unlock()
				if err := s.Commit(t.Context(), window, won...); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	c.Report(t, seen)
}
