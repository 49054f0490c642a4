package inboxtest

import (
	"errors"
	"slices"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// activity reads the store's activity since start until until (zero:
// now) by step, skipping the case when the store counts none.
func (b *bundle) activity(until time.Time, step time.Duration) []inbox.Activity {
	b.t.Helper()
	r := capability[inbox.ActivityReader](b)
	got, err := r.Activity(b.ctx, start, until, step)
	if err != nil {
		b.t.Fatalf("Activity(%v): %v", step, err)
	}
	return got
}

// Activity counts what the rows say: events by the minute they were
// received, processed (no destination, or delivered) or died (invalid,
// or refused by a destination), and the duplicates each accept
// answered; an hour's interval sums its minutes, until leaves out what
// came at or after it, a dead event replayed
// is no longer counted dead, and the sweep drops duplicates counted
// long ago.
func testActivity(b *bundle) {
	ids := b.add(item("a"), item("b"), item("c"))
	b.clock.Advance(time.Minute)
	b.accept(item("a"), item("b"), item("d"))
	b.lease("w", 4)
	b.finish("w",
		inbox.Result{ID: ids[0], Status: inbox.StatusProcessed},
		inbox.Result{ID: ids[1], Status: inbox.StatusDead, Error: "invalid"},
		inbox.Result{ID: ids[2], Status: inbox.StatusProcessed, Destinations: []string{"app"}})
	b.clock.Advance(time.Minute)
	b.dispatch("d", app, 1)
	b.dispatch("d", app, 0, b.ended(ids[2], "app", inbox.DeliveryFailed, 410, "gone"))

	minute := func(n int) time.Time { return start.Truncate(time.Minute).Add(time.Duration(n) * time.Minute) }
	want := []inbox.Activity{
		{Start: minute(0), Received: 3},
		{Start: minute(1), Received: 1, Duplicates: 2, Processed: 1, Dead: 1},
		{Start: minute(2), Dead: 1},
	}
	if got := b.activity(time.Time{}, time.Minute); !slices.EqualFunc(got, want, sameActivity) {
		b.t.Errorf("by minute: %+v, want %+v", got, want)
	}
	hour := []inbox.Activity{{Start: start.Truncate(time.Hour), Received: 4, Duplicates: 2, Processed: 1, Dead: 2}}
	if got := b.activity(time.Time{}, time.Hour); !slices.EqualFunc(got, hour, sameActivity) {
		b.t.Errorf("by hour: %+v, want %+v", got, hour)
	}
	if got := b.activity(minute(2), time.Minute); !slices.EqualFunc(got, want[:2], sameActivity) {
		b.t.Errorf("by minute until %v: %+v, want %+v", minute(2), got, want[:2])
	}
	if _, err := b.store.(inbox.ActivityReader).Activity(b.ctx, start, time.Time{}, 30*time.Second); !errors.Is(err, inbox.ErrBadStep) {
		b.t.Errorf("a step of 30s: %v, want inbox.ErrBadStep", err)
	}

	if n := b.replay(inbox.ReplayFilter{IDs: []int64{ids[1]}}); n != 1 {
		b.t.Fatalf("replayed %d, want 1", n)
	}
	want[1].Dead = 0
	if got := b.activity(time.Time{}, time.Minute); !slices.EqualFunc(got, want, sameActivity) {
		b.t.Errorf("after replaying the invalid event: %+v, want %+v", got, want)
	}

	b.clock.Advance(inbox.ActivityKept)
	if _, err := b.store.Sweep(b.ctx, start); err != nil {
		b.t.Fatal(err)
	}
	want[1].Duplicates = 0
	if got := b.activity(time.Time{}, time.Minute); !slices.EqualFunc(got, want, sameActivity) {
		b.t.Errorf("after a sweep %v later: %+v, want %+v (events kept, duplicates dropped)", inbox.ActivityKept, got, want)
	}
}

func sameActivity(a, b inbox.Activity) bool {
	return a.Start.Equal(b.Start) && a.Received == b.Received && a.Duplicates == b.Duplicates &&
		a.Processed == b.Processed && a.Dead == b.Dead
}
