package inboxtest

import (
	"maps"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

func testStatsEmpty(b *bundle) {
	st := b.stats()
	if len(st.Sources) != 0 || st.Pending != 0 || !st.OldestPending.IsZero() {
		b.t.Errorf("stats of an empty inbox: %+v", st)
	}
}

func testStats(b *bundle) {
	ids := sorted(b.add(item("a1", from("a")), item("a2", from("a")), item("b1", from("b")))...)
	b.clock.Advance(time.Minute)
	b.accept(item("a1", from("a")), item("a3", from("a")), item("b1", from("b")))
	b.lease("w1", 2)
	b.finish("w1",
		inbox.Result{ID: ids[0], Status: inbox.StatusProcessed},
		inbox.Result{ID: ids[1], Status: inbox.StatusRetry, NextAttemptAt: start.Add(time.Hour)})
	b.lease("w1", 1)
	b.finish("w1", inbox.Result{ID: ids[2], Status: inbox.StatusDead, Error: "bad"})

	st := b.stats()
	want := map[string]inbox.SourceStats{
		"a": {ByStatus: map[inbox.Status]int{inbox.StatusProcessed: 1, inbox.StatusRetry: 1, inbox.StatusReceived: 1}, Accepted: 3, Duplicates: 1},
		"b": {ByStatus: map[inbox.Status]int{inbox.StatusDead: 1}, Accepted: 1, Duplicates: 1},
	}
	if !maps.EqualFunc(st.Sources, want, func(x, y inbox.SourceStats) bool {
		return maps.Equal(x.ByStatus, y.ByStatus) && x.Accepted == y.Accepted && x.Duplicates == y.Duplicates
	}) {
		b.t.Errorf("sources: %+v, want %+v", st.Sources, want)
	}
	if st.Pending != 2 || !st.OldestPending.Equal(start) {
		b.t.Errorf("pending %d, oldest %v; want 2 (the retry and a3), oldest received at %v", st.Pending, st.OldestPending, start)
	}

	// Counters outlive the events they counted.
	b.clock.Advance(time.Hour)
	if _, err := b.store.Sweep(b.ctx, b.clock.Now()); err != nil {
		b.t.Fatal(err)
	}
	st = b.stats()
	if a := st.Sources["a"]; a.Accepted != 3 || a.Duplicates != 1 || a.ByStatus[inbox.StatusProcessed] != 0 {
		b.t.Errorf("source a after sweeping its processed event: %+v", a)
	}
}
