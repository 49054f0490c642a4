package inboxtest

import (
	"slices"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

func testReplayDeadOnly(b *bundle) {
	ids := sorted(b.add(item("a"), item("b"), item("c"))...)
	b.lease("w1", 3)
	b.finish("w1",
		inbox.Result{ID: ids[0], Status: inbox.StatusProcessed},
		inbox.Result{ID: ids[1], Status: inbox.StatusDead, Error: "410 from app"},
		inbox.Result{ID: ids[2], Status: inbox.StatusRetry, NextAttemptAt: start.Add(time.Hour), Error: "503"},
	)
	if n := b.replay(inbox.ReplayFilter{Dead: true}); n != 1 {
		b.t.Fatalf("replayed %d dead events, want 1", n)
	}
	e := b.get(ids[1])
	if e.Status != inbox.StatusReceived || e.Attempts != 0 || e.LastError != "" || !e.NextAttemptAt.IsZero() {
		b.t.Errorf("replayed event: status %s, attempts %d, error %q, next %v; want received afresh",
			e.Status, e.Attempts, e.LastError, e.NextAttemptAt)
	}
	b.status(ids[0], inbox.StatusProcessed)
	b.status(ids[2], inbox.StatusRetry)
	if got := b.leaseIDs("w2", 3); !slices.Equal(got, ids[1:2]) {
		b.t.Errorf("lease after replay: %v, want the replayed %d", got, ids[1])
	}
}

func testReplayFilters(b *bundle) {
	a1 := b.add(item("1", from("a"), of("t1")))[0]
	b.clock.Advance(time.Hour)
	a2 := b.add(item("2", from("a"), of("t2")))[0]
	b.clock.Advance(time.Hour)
	b1 := b.add(item("3", from("b"), of("t1")))[0]
	b.clock.Advance(time.Hour)
	b2 := b.add(item("4", from("b"), of("t2")))[0]
	cases := []struct {
		f    inbox.ReplayFilter
		want []int64
	}{
		{inbox.ReplayFilter{}, []int64{a1, a2, b1, b2}},
		{inbox.ReplayFilter{Source: "a"}, []int64{a1, a2}},
		{inbox.ReplayFilter{Tenant: "t1"}, []int64{a1, b1}},
		{inbox.ReplayFilter{Since: start.Add(2 * time.Hour)}, []int64{b1, b2}},
		{inbox.ReplayFilter{IDs: []int64{b2, a2, b2, 1 << 40}}, []int64{a2, b2}},
		{inbox.ReplayFilter{Source: "b", Tenant: "t2"}, []int64{b2}},
		{inbox.ReplayFilter{Source: "a", IDs: []int64{a1, b1}}, []int64{a1}},
		{inbox.ReplayFilter{Source: "c"}, nil},
	}
	for _, c := range cases {
		b.processAll()
		if n := b.replay(c.f); n != len(c.want) {
			b.t.Errorf("Replay(%+v) = %d, want %d", c.f, n, len(c.want))
		}
		if got := b.received(); !slices.Equal(got, sorted(c.want...)) {
			b.t.Errorf("Replay(%+v) put back %v, want %v", c.f, got, sorted(c.want...))
		}
	}
}

func testReplayKeepsApplied(b *bundle) {
	first := b.add(item("a", entity("ch_1", 1, "open")))[0]
	evs := b.lease("w1", 1)
	want := b.apply(evs...)[0]
	b.finish("w1", inbox.Result{ID: first, Status: inbox.StatusProcessed})
	second := b.add(item("b", entity("ch_1", 2, "paid")))[0]
	b.apply(b.lease("w1", 1)...)
	b.finish("w1", inbox.Result{ID: second, Status: inbox.StatusProcessed})

	if n := b.replay(inbox.ReplayFilter{IDs: []int64{first}}); n != 1 {
		b.t.Fatalf("replayed %d, want 1", n)
	}
	again := b.lease("w2", 5)
	if len(again) != 1 || again[0].ID != first {
		b.t.Fatalf("lease after replay: %v, want %d", idsOf(again), first)
	}
	if again[0].Applied == nil || *again[0].Applied != want {
		b.t.Errorf("replayed event carries Applied %v, want the recorded %+v", again[0].Applied, want)
	}
	b.applied("apply after replay", b.apply(again...)[0], want)
	b.entityAt("ch_1", "paid", 2, second)
}

func testReplayPages(b *bundle) {
	b.add(item("a"), item("b"), item("c"), item("d"), item("e"))
	b.processAll()
	var calls []int
	n, err := b.store.Replay(b.ctx, inbox.ReplayFilter{PageSize: 2}, func(done int) { calls = append(calls, done) })
	if err != nil {
		b.t.Fatal(err)
	}
	if n != 5 || !slices.Equal(calls, []int{2, 4, 5}) {
		b.t.Errorf("Replay = %d with progress %v, want 5 with [2 4 5]", n, calls)
	}
	if got := b.received(); len(got) != 5 {
		b.t.Errorf("%d events received after replay, want 5", len(got))
	}
}

func testReplaySkipsLeased(b *bundle) {
	ids := sorted(b.add(item("a"), item("b"), item("c"))...)
	b.lease("w1", 1)
	if n := b.replay(inbox.ReplayFilter{}); n != 2 {
		b.t.Fatalf("replayed %d, want 2: the leased event is skipped", n)
	}
	if e := b.get(ids[0]); e.Attempts != 1 {
		b.t.Errorf("leased event after replay: attempts %d, want its lease's 1", e.Attempts)
	}
	if got := b.idsFor("w2", 5, 10*lease); !slices.Equal(got, ids[1:]) {
		b.t.Fatalf("lease after replay: %v, want %v", got, ids[1:])
	}
	b.clock.Advance(lease + time.Second)
	if n := b.replay(inbox.ReplayFilter{}); n != 1 {
		b.t.Fatalf("replayed %d once the first lease expired, want 1", n)
	}
	if e := b.get(ids[0]); e.Attempts != 0 || e.Status != inbox.StatusReceived {
		b.t.Errorf("replayed event: attempts %d, status %s", e.Attempts, e.Status)
	}
}

// idsFor leases up to n events for owner for d and returns their ids.
func (b *bundle) idsFor(owner string, n int, d time.Duration) []int64 {
	b.t.Helper()
	return idsOf(b.leaseFor(owner, n, d))
}
