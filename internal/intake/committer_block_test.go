package intake_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/intake"
)

// gatedStore holds every Accept until the test lets it through: the
// committer's write is "still running" for as long as the test wants. It
// writes through to a real SQLite inbox once let through, unless it is
// told to fail instead.
type gatedStore struct {
	inner *countingStore
	// calls receives the items of each Accept as it starts.
	calls chan []inbox.Item
	// gate decides each Accept: nil writes through, an error fails it.
	gate chan error

	mu      sync.Mutex
	writing bool // an Accept is between its start and its return
}

func newGatedStore(t *testing.T) *gatedStore {
	return &gatedStore{
		inner: &countingStore{Store: openStore(t)},
		calls: make(chan []inbox.Item, 16),
		gate:  make(chan error),
	}
}

func (s *gatedStore) Accept(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	s.mu.Lock()
	s.writing = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.writing = false
		s.mu.Unlock()
	}()
	s.calls <- items
	if err := <-s.gate; err != nil {
		return nil, err
	}
	return s.inner.Accept(ctx, items)
}

// isWriting reports whether an Accept has started and not returned.
func (s *gatedStore) isWriting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writing
}

// answer is what one Submit returned.
type answer struct {
	out inbox.Outcome
	err error
	// during: the store's write was still running when Submit returned.
	during bool
}

// submitAsync submits it and sends its answer on the returned channel.
func submitAsync(c *intake.Committer, s *gatedStore, it inbox.Item) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		outs, errs, err := c.Submit(context.Background(), []inbox.Item{it})
		a := answer{err: err, during: s.isWriting()}
		if err == nil {
			a.out, a.err = outs[0], errs[0]
		}
		ch <- a
	}()
	return ch
}

// A copy that joins the first copy in flight is answered only once the
// first copy is durable (G1, G2), and the first copy's write is the only
// one: single-flight means the store is asked for one item.
func TestJoinedCopyWaitsForTheWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newGatedStore(t)
		c := newCommitter(s, intake.CommitterOptions{RecentKeys: -1})
		defer c.Close()

		first := submitAsync(c, s, item("evt_join"))
		if got := <-s.calls; len(got) != 1 {
			t.Fatalf("first write: %d items, want 1", len(got))
		}
		const copies = 20
		joined := make([]<-chan answer, copies)
		for i := range joined {
			joined[i] = submitAsync(c, s, item("evt_join"))
		}
		synctest.Wait() // every copy is blocked, or has (wrongly) answered
		for i, ch := range joined {
			select {
			case a := <-ch:
				t.Fatalf("copy %d answered %v (err %v) while the first copy's write was still running", i, a.out.Status, a.err)
			default:
			}
		}
		select {
		case <-s.calls:
			t.Fatal("a copy was written again while the first copy was in flight")
		default:
		}
		s.gate <- nil
		if a := <-first; a.err != nil || a.out.Status != dedupe.New || a.during {
			t.Fatalf("first copy: %+v, want new after its write", a)
		}
		for i, ch := range joined {
			if a := <-ch; a.err != nil || a.out.Status != dedupe.Duplicate || a.during {
				t.Fatalf("copy %d: %+v, want duplicate after the write", i, a)
			}
		}
		if n := s.inner.items.Load(); n != 1 {
			t.Fatalf("the store was asked to write %d items for %d copies, want 1", n, copies+1)
		}
	})
}

// When the first copy's write fails, every copy that joined it gets the
// error (503, never a 200 that hides the failure), nothing is remembered,
// and the next delivery is new (G2, G4).
func TestJoinedCopiesShareTheFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newGatedStore(t)
		c := newCommitter(s, intake.CommitterOptions{})
		defer c.Close()

		first := submitAsync(c, s, item("evt_fail"))
		<-s.calls
		second := submitAsync(c, s, item("evt_fail"))
		synctest.Wait()
		boom := errors.New("disk I/O error")
		s.gate <- boom
		for name, ch := range map[string]<-chan answer{"first": first, "joined": second} {
			if a := <-ch; !errors.Is(a.err, boom) {
				t.Errorf("%s copy: %+v, want the store's error", name, a)
			}
		}
		retry := submitAsync(c, s, item("evt_fail"))
		if got := <-s.calls; len(got) != 1 {
			t.Fatalf("retry write: %d items", len(got))
		}
		s.gate <- nil
		if a := <-retry; a.err != nil || a.out.Status != dedupe.New {
			t.Fatalf("retry after the failed write: %+v, want new", a)
		}
	})
}

// A write that fails is not remembered: the same event submitted again
// reaches the store and is new (G4). WriteErr tells the failing write
// (readiness reads it) and clears once a write succeeds.
func TestFailedWriteIsNotRemembered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newGatedStore(t)
		c := newCommitter(s, intake.CommitterOptions{})
		defer c.Close()
		for attempt, gate := range []error{errors.New("database is locked"), nil} {
			ch := submitAsync(c, s, item("evt_again"))
			select {
			case <-s.calls:
			case a := <-ch:
				t.Fatalf("attempt %d answered %+v without reaching the store", attempt, a)
			}
			s.gate <- gate
			a := <-ch
			if got := c.WriteErr(); !errors.Is(got, gate) {
				t.Fatalf("attempt %d: WriteErr %v, want %v", attempt, got, gate)
			}
			switch {
			case gate != nil && a.err == nil:
				t.Fatalf("attempt %d: %+v, want the store's error", attempt, a)
			case gate == nil && (a.err != nil || a.out.Status != dedupe.New):
				t.Fatalf("attempt %d after a failed write: %+v, want new", attempt, a)
			}
		}
	})
}

// Close writes what is queued behind a running write and answers it; it
// neither drops it nor fails it (G4). The committer's loop picks between
// its queue and its stop signal, so the round runs many times: a loop that
// stopped without draining would lose one of them.
func TestCloseWritesQueuedEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newGatedStore(t)
		for round := range 20 {
			closeWithQueuedEvent(t, s, round)
		}
	})
}

func closeWithQueuedEvent(t *testing.T, s *gatedStore, round int) {
	t.Helper()
	c := newCommitter(s, intake.CommitterOptions{})
	running, queuedID := fmt.Sprint("evt_running_", round), fmt.Sprint("evt_queued_", round)
	first := submitAsync(c, s, item(running))
	<-s.calls
	queued := submitAsync(c, s, item(queuedID))
	synctest.Wait() // queued sits in the queue behind the running write
	closed := make(chan struct{})
	go func() {
		c.Close()
		close(closed)
	}()
	synctest.Wait()
	select {
	case <-closed:
		t.Fatal("Close returned while a write was running")
	default:
	}
	s.gate <- nil
	select {
	case got := <-s.calls:
		if len(got) != 1 || got[0].Event.EventID != queuedID {
			t.Fatalf("round %d: write after close: %+v, want the queued event", round, got)
		}
	case <-closed:
		t.Fatalf("round %d: Close returned without writing the queued event", round)
	}
	s.gate <- nil
	for name, ch := range map[string]<-chan answer{"running": first, "queued": queued} {
		if a := <-ch; a.err != nil || a.out.Status != dedupe.New {
			t.Fatalf("round %d: %s event: %+v, want new", round, name, a)
		}
	}
	<-closed
	if _, _, err := c.Submit(context.Background(), []inbox.Item{item("late")}); !errors.Is(err, intake.ErrClosed) {
		t.Fatalf("submit after close: %v, want ErrClosed", err)
	}
}

// The memory of committed keys is bounded: with room for 32 keys, most of
// 300 resubmitted keys are answered by the store again (G6).
func TestRecentKeysAreBounded(t *testing.T) {
	t.Parallel()
	store := &countingStore{Store: openStore(t)}
	const size, keys = 32, 300
	c := newCommitter(store, intake.CommitterOptions{RecentKeys: size})
	defer c.Close()
	submitAll := func(want dedupe.Status) {
		t.Helper()
		for i := range keys {
			outs, errs, err := c.Submit(context.Background(), []inbox.Item{item(fmt.Sprint("k", i))})
			if err != nil || errs[0] != nil || outs[0].Status != want {
				t.Fatalf("key %d: %+v %v %v, want %v", i, outs, errs, err, want)
			}
		}
	}
	submitAll(dedupe.New)
	before := store.items.Load()
	submitAll(dedupe.Duplicate)
	if reached := store.items.Load() - before; reached < keys-size {
		t.Fatalf("%d of %d resubmitted keys reached the store: the memory holds more than %d", reached, keys, size)
	}
}

// parallelStore is a gatedStore that asks for two writers.
type parallelStore struct{ *gatedStore }

func (parallelStore) AcceptWriters() int { return 2 }

// A store that takes concurrent writes gets them: while one batch's write
// is running, the next request's batch is written beside it instead of
// queuing behind it.
func TestParallelWriters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := parallelStore{newGatedStore(t)}
		c := newCommitter(s, intake.CommitterOptions{})
		defer c.Close()
		first := submitAsync(c, s.gatedStore, item("evt_one"))
		<-s.calls
		second := submitAsync(c, s.gatedStore, item("evt_two"))
		synctest.Wait()
		select {
		case got := <-s.calls:
			if len(got) != 1 || got[0].Event.EventID != "evt_two" {
				t.Fatalf("second write: %+v", got)
			}
		default:
			t.Fatal("the second request waited for the first write: one writer")
		}
		s.gate <- nil
		s.gate <- nil
		for _, ch := range []<-chan answer{first, second} {
			if a := <-ch; a.err != nil || a.out.Status != dedupe.New {
				t.Fatalf("%+v, want new", a)
			}
		}
	})
}

// A hung store is an answer, not a wait (G4): a write that has not
// returned at the store timeout fails its requests with ErrStoreTimeout
// while it is still running (the store ignored its deadline), without
// waiting for it; the retry after it is decided by the store.
func TestHungWriteFailsAtTheStoreTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 5 * time.Second
		s := newGatedStore(t)
		c := newCommitter(s, intake.CommitterOptions{RecentKeys: -1, StoreTimeout: timeout})
		defer c.Close()
		start := time.Now()
		hung := submitAsync(c, s, item("evt_hung"))
		<-s.calls
		var a answer
		select {
		case a = <-hung:
		case <-time.After(10 * timeout):
			s.gate <- errors.New("let go, so that Close returns")
			t.Fatal("a write the store does not return: not answered at ten times the store timeout")
		}
		if !errors.Is(a.err, intake.ErrStoreTimeout) || !a.during {
			t.Fatalf("a write the store does not return: %+v, want ErrStoreTimeout while it runs", a)
		}
		if waited := time.Since(start); waited != timeout {
			t.Fatalf("answered after %v, want the store timeout %v", waited, timeout)
		}
		s.gate <- errors.New("the hung write ends, failed")
		retry := submitAsync(c, s, item("evt_hung"))
		<-s.calls
		s.gate <- nil
		if a := <-retry; a.err != nil || a.out.Status != dedupe.New {
			t.Fatalf("the retry: %+v, want new", a)
		}
	})
}

// A store that fails at once failed; it did not time out: the answer
// carries its error, never ErrStoreTimeout, however the committer's
// goroutines happen to be scheduled.
func TestStoreErrorIsNotATimeout(t *testing.T) {
	t.Parallel()
	s := newGatedStore(t)
	c := newCommitter(s, intake.CommitterOptions{RecentKeys: -1, StoreTimeout: time.Minute})
	defer c.Close()
	refused := errors.New("prepared statement does not exist")
	for i := range 200 {
		got := submitAsync(c, s, item(fmt.Sprintf("evt_refused_%d", i)))
		<-s.calls
		s.gate <- refused
		if a := <-got; !errors.Is(a.err, refused) || errors.Is(a.err, intake.ErrStoreTimeout) {
			t.Fatalf("write %d failed at once: %v; want the store's error, not a timeout", i, a.err)
		}
	}
}
