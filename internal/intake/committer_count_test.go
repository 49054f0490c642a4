package intake_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxpostgres "github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// statsStore is a store that counts remembered duplicates and reports
// its stats.
type statsStore interface {
	intake.Acceptor
	inbox.DuplicateCounter
	Stats(ctx context.Context) (inbox.Stats, error)
}

// Duplicates answered from the memory of recent keys never reach the
// store's Accept, yet they count in the store's stats, like the ones the
// store answered, on either backend.
func TestRememberedDuplicatesAreCounted(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) statsStore{
		"sqlite": func(t *testing.T) statsStore { return openStore(t) },
		"postgres": func(t *testing.T) statsStore {
			s, err := inboxpostgres.Open(t.Context(), pgtest.New(t), inboxpostgres.Options{AcceptWriters: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := open(t)
			counting := &countingAcceptor{Acceptor: store, DuplicateCounter: store}
			c := newCommitter(counting, intake.CommitterOptions{})
			submit := func(want dedupe.Status) {
				t.Helper()
				outs, errs, err := c.Submit(t.Context(), []inbox.Item{item("evt_remembered")})
				if err != nil || errs[0] != nil || outs[0].Status != want {
					t.Fatalf("submit: %+v, %v, %v; want %v", outs, errs, err, want)
				}
			}
			submit(dedupe.New)
			for range 3 {
				submit(dedupe.Duplicate)
			}
			c.Close()
			if n := counting.items.Load(); n != 1 {
				t.Fatalf("the store was asked about %d items, want 1: the duplicates were not answered from memory", n)
			}
			st, err := store.Stats(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Sources["test"]; got.Accepted != 1 || got.Duplicates != 3 {
				t.Fatalf("stats %+v, want 1 accepted and 3 duplicates", got)
			}
		})
	}
}

// countingAcceptor counts the items Accept is asked about.
type countingAcceptor struct {
	intake.Acceptor
	inbox.DuplicateCounter
	items atomic.Int64
}

func (a *countingAcceptor) Accept(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	a.items.Add(int64(len(items)))
	return a.Acceptor.Accept(ctx, items)
}

// Many requests answered from memory while the counts are handed over
// (once a second), with a pause until a hand-over has counted the first
// burst, so that later hand-overs start from nothing while requests
// resume: every duplicate is counted exactly once.
func TestRememberedDuplicatesCountedUnderLoad(t *testing.T) {
	t.Parallel()
	store := openStore(t)
	c := newCommitter(store, intake.CommitterOptions{})
	if _, _, err := c.Submit(t.Context(), []inbox.Item{item("evt_hot")}); err != nil {
		t.Fatal(err)
	}
	var dups atomic.Int64
	burst := func(d time.Duration) {
		var wg sync.WaitGroup
		deadline := time.Now().Add(d)
		for range 16 {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					outs, errs, err := c.Submit(context.Background(), []inbox.Item{item("evt_hot")})
					if err != nil || errs[0] != nil {
						t.Error(err, errs[0])
						return
					}
					if outs[0].Status == dedupe.Duplicate {
						dups.Add(1)
					}
				}
			})
		}
		wg.Wait()
	}
	counted := func() int64 {
		st, err := store.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return st.Sources["test"].Duplicates
	}
	burst(1200 * time.Millisecond)
	deadline := time.Now().Add(30 * time.Second)
	for counted() != dups.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("the first burst's duplicates not handed over within 30s: %d counted, %d answered", counted(), dups.Load())
		}
		runtime.Gosched()
	}
	burst(1200 * time.Millisecond)
	c.Close()
	st, err := store.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Sources["test"].Duplicates; got != dups.Load() {
		t.Fatalf("%d duplicates counted, %d answered", got, dups.Load())
	}
}
