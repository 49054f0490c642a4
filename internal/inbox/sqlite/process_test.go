package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/testproc"
)

const (
	leasers          = 2
	leaserGoroutines = 4
	leasedEvents     = 400
)

// TestLeaseAcrossProcesses leases the events of one file from two OS
// processes at once, each with several goroutines, until none is due:
// every event must be leased exactly once across all of them.
func TestLeaseAcrossProcesses(t *testing.T) {
	if c, ok := testproc.AsChild(t); ok {
		runLeaser(t, c)
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "inbox.db")
	s, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	items := make([]inbox.Item, leasedEvents)
	for i := range items {
		items[i] = testItem(strconv.Itoa(i))
	}
	accepted, err := s.Accept(t.Context(), items)
	if err != nil {
		t.Fatal(err)
	}

	var all []int64
	for i, data := range testproc.Run(t, leasers, path) {
		var got []int64
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		t.Logf("leaser %d leased %d events", i, len(got))
		all = append(all, got...)
	}
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Errorf("event %d leased twice", all[i])
		}
	}
	want := make([]int64, len(accepted))
	for i, o := range accepted {
		want[i] = o.ID
	}
	slices.Sort(want)
	if !slices.Equal(slices.Compact(all), want) {
		t.Fatalf("leased %d distinct events, want all %d", len(slices.Compact(all)), len(want))
	}
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Sources["shop"].ByStatus[inbox.StatusProcessed]; n != leasedEvents || st.Pending != 0 {
		t.Errorf("%d processed, %d pending; want %d and 0", n, st.Pending, leasedEvents)
	}
}

// runLeaser is the body of one leaser process: it opens the database, waits
// to be released with the others, then leases and finishes batches of
// random size from several goroutines until nothing is due, and reports the
// ids it leased.
func runLeaser(t *testing.T, c *testproc.Child) {
	s, err := sqlite.Open(c.Arg, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c.Ready(t)
	n := uint64(c.Index)
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got = []int64{}
	)
	for g := range leaserGoroutines {
		rng := rand.New(rand.NewPCG(n, uint64(g)))
		owner := fmt.Sprintf("p%d-g%d", c.Index, g)
		wg.Go(func() {
			for {
				evs, err := leaseAndFinish(t.Context(), s, owner, 1+rng.IntN(8))
				if err != nil {
					t.Error(err)
					return
				}
				if len(evs) == 0 {
					return
				}
				mu.Lock()
				got = append(got, evs...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	c.Report(t, got)
}

// leaseAndFinish leases up to n events for owner and finishes them
// processed, returning their ids.
func leaseAndFinish(ctx context.Context, s *sqlite.Store, owner string, n int) ([]int64, error) {
	evs, err := s.Lease(ctx, owner, n, time.Hour)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(evs))
	results := make([]inbox.Result, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
		results[i] = inbox.Result{ID: e.ID, Status: inbox.StatusProcessed}
	}
	return ids, s.Finish(ctx, owner, results)
}
