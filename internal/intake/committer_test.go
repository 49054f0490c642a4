package intake_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxsqlite "github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/intake"
)

// countingStore counts the transactions Accept runs on a real store.
type countingStore struct {
	*inboxsqlite.Store
	txs   atomic.Int64
	items atomic.Int64
}

func (s *countingStore) Accept(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	s.txs.Add(1)
	s.items.Add(int64(len(items)))
	return s.Store.Accept(ctx, items)
}

func openStore(t *testing.T) *inboxsqlite.Store {
	t.Helper()
	return openStoreAt(t, nil)
}

func openStoreAt(t *testing.T, now func() time.Time) *inboxsqlite.Store {
	t.Helper()
	s, err := inboxsqlite.Open(t.TempDir()+"/hookgate.db", inboxsqlite.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testStoreTimeout is the store timeout of the committers these tests
// make: far above a write on a machine whose other tests fsync at once,
// so only the tests of the timeout itself see one.
const testStoreTimeout = time.Minute

// newCommitter is intake.NewCommitter with testStoreTimeout unless the
// test sets a store timeout of its own.
func newCommitter(s intake.Acceptor, opts intake.CommitterOptions) *intake.Committer {
	if opts.StoreTimeout == 0 {
		opts.StoreTimeout = testStoreTimeout
	}
	return intake.NewCommitter(s, opts)
}

func item(id string) inbox.Item {
	k := dedupe.Key{Provider: "test", EventID: id}
	return inbox.Item{Event: inbox.Event{Hash: k.Hash(), Scope: k.Scope(), Source: "test", Provider: "test", EventID: id, Payload: []byte("{}")}, Window: time.Hour}
}

// Group commit: concurrent submitters share transactions, and every event
// gets its own outcome.
func TestCommitterGroupsConcurrentSubmits(t *testing.T) {
	t.Parallel()
	store := &countingStore{Store: openStore(t)}
	c := newCommitter(store, intake.CommitterOptions{})
	defer c.Close()
	const submitters, each = 64, 20
	var wg sync.WaitGroup
	var news atomic.Int64
	for g := range submitters {
		wg.Go(func() {
			for i := range each {
				outs, errs, err := c.Submit(context.Background(), []inbox.Item{item(fmt.Sprintf("e%d-%d", g, i))})
				if err != nil || errs[0] != nil {
					t.Errorf("submit: %v %v", err, errs[0])
					return
				}
				if outs[0].Status == dedupe.New && outs[0].ID > 0 {
					news.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if news.Load() != submitters*each {
		t.Fatalf("new events: %d, want %d", news.Load(), submitters*each)
	}
	if txs := store.txs.Load(); txs >= submitters*each {
		t.Fatalf("%d transactions for %d events: no grouping", txs, submitters*each)
	}
	t.Logf("%d events in %d transactions", submitters*each, store.txs.Load())
}

// Single-flight: copies of one event submitted together resolve to one New
// and duplicates, written once.
func TestCommitterSingleFlight(t *testing.T) {
	t.Parallel()
	store := &countingStore{Store: openStore(t)}
	// Without the memory of committed keys, so every copy meets the first
	// one in flight or in the store.
	c := newCommitter(store, intake.CommitterOptions{RecentKeys: -1})
	defer c.Close()
	const copies = 50
	var wg sync.WaitGroup
	statuses := make([]dedupe.Status, copies)
	for i := range copies {
		wg.Go(func() {
			outs, errs, err := c.Submit(context.Background(), []inbox.Item{item("same")})
			if err != nil || errs[0] != nil {
				t.Errorf("submit: %v %v", err, errs)
				return
			}
			statuses[i] = outs[0].Status
		})
	}
	wg.Wait()
	n := 0
	for _, s := range statuses {
		if s == dedupe.New {
			n++
		} else if s != dedupe.Duplicate {
			t.Errorf("copy status %v, want new or duplicate", s)
		}
	}
	if n != 1 {
		t.Fatalf("%d copies were new, want 1", n)
	}
	// Copies inside one request are one event too.
	outs, _, err := c.Submit(context.Background(), []inbox.Item{item("pair"), item("pair")})
	if err != nil || outs[0].Status != dedupe.New || outs[1].Status != dedupe.Duplicate {
		t.Fatalf("two copies in one submit: %+v %v", outs, err)
	}
	evs, err := store.List(context.Background(), inbox.Filter{})
	if err != nil || len(evs) != 2 {
		t.Fatalf("stored events: %d %v, want 2", len(evs), err)
	}
}

// Close answers every submitted event and refuses new ones.
func TestCommitterCloseDrains(t *testing.T) {
	t.Parallel()
	c := newCommitter(openStore(t), intake.CommitterOptions{})
	var wg sync.WaitGroup
	var answered, refused atomic.Int64
	start := make(chan struct{})
	for i := range 100 {
		wg.Go(func() {
			<-start
			outs, errs, err := c.Submit(context.Background(), []inbox.Item{item(fmt.Sprint(i))})
			switch {
			case err == intake.ErrClosed:
				refused.Add(1)
			case err == nil && errs[0] == nil && outs[0].Status == dedupe.New:
				answered.Add(1)
			default:
				t.Errorf("submit %d: %v %v", i, err, errs)
			}
		})
	}
	close(start)
	c.Close()
	wg.Wait()
	if answered.Load()+refused.Load() != 100 {
		t.Fatalf("answered %d + refused %d != 100", answered.Load(), refused.Load())
	}
	if _, _, err := c.Submit(context.Background(), []inbox.Item{item("late")}); err != intake.ErrClosed {
		t.Fatalf("submit after close: %v, want ErrClosed", err)
	}
}

// Redeliveries of committed keys are answered from memory, without a
// transaction, until the window ends; then the store decides again.
func TestCommitterRemembersCommittedKeys(t *testing.T) {
	t.Parallel()
	clock := dedupetest.NewClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	store := &countingStore{Store: openStoreAt(t, clock.Now)}
	c := newCommitter(store, intake.CommitterOptions{Now: clock.Now})
	defer c.Close()
	submit := func(id string) inbox.Outcome {
		t.Helper()
		outs, errs, err := c.Submit(context.Background(), []inbox.Item{item(id)})
		if err != nil || errs[0] != nil {
			t.Fatalf("submit %s: %v %v", id, err, errs[0])
		}
		return outs[0]
	}
	if o := submit("a"); o.Status != dedupe.New {
		t.Fatalf("first: %v", o.Status)
	}
	txs := store.txs.Load()
	for range 10 {
		if o := submit("a"); o.Status != dedupe.Duplicate || !o.FirstSeen.Equal(clock.Now()) {
			t.Fatalf("redelivery: %v first seen %v", o.Status, o.FirstSeen)
		}
	}
	if got := store.txs.Load(); got != txs {
		t.Fatalf("redeliveries ran %d transactions, want 0", got-txs)
	}
	clock.Advance(time.Hour)
	if o := submit("a"); o.Status != dedupe.New {
		t.Fatalf("after the window: %v, want new", o.Status)
	}
}
