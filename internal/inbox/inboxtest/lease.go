package inboxtest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

func testLeaseInIDOrder(b *bundle) {
	ids := sorted(b.add(item("a"), item("b"), item("c"), item("d"), item("e"))...)
	first := b.lease("w1", 3)
	if got := idsOf(first); !slices.Equal(got, ids[:3]) {
		b.t.Fatalf("first lease %v, want %v", got, ids[:3])
	}
	for _, e := range first {
		if e.Attempts != 1 || e.Status != inbox.StatusReceived || len(e.Payload) == 0 {
			b.t.Errorf("leased event %d: attempts %d, status %s, payload %q", e.ID, e.Attempts, e.Status, e.Payload)
		}
	}
	if got := b.leaseIDs("w2", 3); !slices.Equal(got, ids[3:]) {
		b.t.Fatalf("second lease %v, want %v", got, ids[3:])
	}
	if got := b.leaseIDs("w3", 3); len(got) != 0 {
		b.t.Fatalf("third lease %v, want none: all are held", got)
	}
	if got := b.leaseIDs("w3", 0); len(got) != 0 {
		b.t.Fatalf("lease of 0 returned %v", got)
	}
}

func testLeaseConcurrent(b *bundle) {
	const (
		events   = 120
		leasers  = 12
		perLease = 4
	)
	items := make([]inbox.Item, events)
	for i := range items {
		items[i] = item(fmt.Sprint(i))
	}
	want := sorted(b.add(items...)...)

	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got []int64
	)
	for w := range leasers {
		wg.Go(func() {
			owner := fmt.Sprint("w", w)
			for {
				evs, err := b.store.Lease(b.ctx, owner, perLease, lease)
				if err != nil {
					b.t.Error(err)
					return
				}
				if len(evs) == 0 {
					return
				}
				mu.Lock()
				got = append(got, idsOf(evs)...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(got)
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			b.t.Errorf("event %d leased twice", got[i])
		}
	}
	if !slices.Equal(slices.Compact(got), want) {
		b.t.Errorf("leased %d distinct events, want all %d", len(slices.Compact(got)), events)
	}
}

func testLeaseExpired(b *bundle) {
	ids := sorted(b.add(item("a"), item("b"))...)
	b.lease("w1", 10)
	b.clock.Advance(lease - time.Second)
	if got := b.leaseIDs("w2", 10); len(got) != 0 {
		b.t.Fatalf("lease before expiry: %v, want none", got)
	}
	b.clock.Advance(2 * time.Second)
	again := b.lease("w2", 10)
	if got := idsOf(again); !slices.Equal(got, ids) {
		b.t.Fatalf("lease after expiry: %v, want %v", got, ids)
	}
	if again[0].Attempts != 2 {
		b.t.Errorf("attempts after a second lease: %d, want 2", again[0].Attempts)
	}
	// The first owner comes back late: its results no longer count.
	err := b.store.Finish(b.ctx, "w1", []inbox.Result{{ID: ids[0], Status: inbox.StatusProcessed}, {ID: ids[1], Status: inbox.StatusDead, Error: "late"}})
	var lost *inbox.LostError
	if !errors.As(err, &lost) || !slices.Equal(lost.IDs, ids) {
		b.t.Fatalf("late Finish: %v, want both results reported lost", err)
	}
	b.status(ids[0], inbox.StatusReceived)
	b.status(ids[1], inbox.StatusReceived)
	b.finish("w2", inbox.Result{ID: ids[0], Status: inbox.StatusProcessed})
	b.status(ids[0], inbox.StatusProcessed)
}

func testFinishByNonOwner(b *bundle) {
	id := b.add(item("a"))[0]
	b.lease("w1", 1)
	if err := b.store.Finish(b.ctx, "w2", []inbox.Result{{ID: id, Status: inbox.StatusProcessed}}); !errors.Is(err, inbox.ErrNotOwner) {
		b.t.Fatalf("Finish by a non-owner: %v, want ErrNotOwner", err)
	}
	b.status(id, inbox.StatusReceived)
	if got := b.leaseIDs("w3", 1); len(got) != 0 {
		b.t.Fatalf("lease after a non-owner's finish: %v, want none: w1 still holds it", got)
	}
	b.clock.Advance(time.Second)
	b.finish("w1", inbox.Result{ID: id, Status: inbox.StatusProcessed})
	e := b.get(id)
	if e.Status != inbox.StatusProcessed || !e.ProcessedAt.Equal(start.Add(time.Second)) {
		b.t.Errorf("after the owner's finish: status %s, processed at %v; want processed at %v", e.Status, e.ProcessedAt, start.Add(time.Second))
	}
	b.clock.Advance(2 * lease)
	if got := b.leaseIDs("w3", 1); len(got) != 0 {
		b.t.Errorf("lease of a processed event: %v", got)
	}
}

func testRetryDue(b *bundle) {
	id := b.add(item("a"))[0]
	b.lease("w1", 1)
	next := start.Add(10 * time.Minute)
	b.finish("w1", inbox.Result{ID: id, Status: inbox.StatusRetry, NextAttemptAt: next, Error: "503 from app"})
	e := b.get(id)
	if e.Status != inbox.StatusRetry || !e.NextAttemptAt.Equal(next) || e.LastError != "503 from app" {
		b.t.Fatalf("after retry: status %s, next %v, error %q", e.Status, e.NextAttemptAt, e.LastError)
	}
	b.clock.Advance(10*time.Minute - time.Second)
	if got := b.leaseIDs("w2", 1); len(got) != 0 {
		b.t.Fatalf("lease before the next attempt is due: %v", got)
	}
	b.clock.Advance(2 * time.Second)
	got := b.lease("w2", 1)
	if len(got) != 1 || got[0].ID != id {
		b.t.Fatalf("lease after the next attempt is due: %v, want %d", idsOf(got), id)
	}
	if got[0].Attempts != 2 || got[0].LastError != "503 from app" {
		b.t.Errorf("re-leased: attempts %d, last error %q; want 2 and the retry's reason", got[0].Attempts, got[0].LastError)
	}
}

func testLeaseRetryAndReceivedInIDOrder(b *bundle) {
	first := b.add(item("a"))[0]
	b.lease("w1", 1)
	b.finish("w1", inbox.Result{ID: first, Status: inbox.StatusRetry, NextAttemptAt: start.Add(time.Minute)})
	second := b.add(item("b"))[0]
	if got := b.leaseIDs("w2", 5); !slices.Equal(got, []int64{second}) {
		b.t.Fatalf("lease while the retry waits: %v, want only %d", got, second)
	}
	b.finish("w2", inbox.Result{ID: second, Status: inbox.StatusRetry, NextAttemptAt: start.Add(time.Minute)})
	b.clock.Advance(time.Minute + time.Second)
	if got := b.leaseIDs("w3", 1); !slices.Equal(got, []int64{first}) {
		b.t.Fatalf("lease of 1 once both are due: %v, want the lower id %d", got, first)
	}
	if got := b.leaseIDs("w3", 1); !slices.Equal(got, []int64{second}) {
		b.t.Fatalf("next lease: %v, want %d", got, second)
	}
}

func testDeadStays(b *bundle) {
	id := b.add(item("a"))[0]
	b.lease("w1", 1)
	b.finish("w1", inbox.Result{ID: id, Status: inbox.StatusDead, Error: "schema: missing id"})
	e := b.get(id)
	if e.Status != inbox.StatusDead || e.LastError != "schema: missing id" || !e.ProcessedAt.IsZero() {
		b.t.Fatalf("dead event: status %s, error %q, processed at %v", e.Status, e.LastError, e.ProcessedAt)
	}
	b.clock.Advance(100 * time.Hour)
	if got := b.leaseIDs("w2", 1); len(got) != 0 {
		b.t.Errorf("lease of a dead event: %v", got)
	}
}
