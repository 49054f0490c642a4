package inboxtest

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// app is the lane most cases deliver on: destination "app" of the suite's
// default source.
var app = inbox.Lane{Source: "shop", Destination: "app"}

// toDeliver leases the event id as owner and finishes it processed for
// dests, so that it becomes delivering with a pending delivery to each.
func (b *bundle) toDeliver(id int64, dests ...string) {
	b.t.Helper()
	evs := b.lease("processor", 1000)
	if !slices.ContainsFunc(evs, func(e inbox.Event) bool { return e.ID == id }) {
		b.t.Fatalf("event %d was not due", id)
	}
	for _, e := range evs {
		if e.ID != id {
			b.finish("processor", inbox.Result{ID: e.ID, Status: inbox.StatusRetry, NextAttemptAt: b.clock.Now()})
		}
	}
	b.finish("processor", inbox.Result{ID: id, Status: inbox.StatusProcessed, Destinations: dests})
}

// dispatch records done and leases up to n deliveries of lane for owner.
func (b *bundle) dispatch(owner string, lane inbox.Lane, n int, done ...inbox.Done) inbox.Dispatched {
	b.t.Helper()
	out, err := b.store.Dispatch(b.ctx, owner, lane, done, n, lease)
	if err != nil {
		b.t.Fatalf("Dispatch: %v", err)
	}
	if len(out.Tasks) > n {
		b.t.Fatalf("Dispatch of %d leased %d", n, len(out.Tasks))
	}
	return out
}

// ended is the end of an attempt on event id to dest, at the clock's time.
func (b *bundle) ended(id int64, dest string, st inbox.DeliveryStatus, code int, msg string) inbox.Done {
	return inbox.Done{Status: st, Attempt: inbox.Attempt{EventID: id, Destination: dest, At: b.clock.Now(),
		Duration: 3 * time.Millisecond, Code: code, Error: msg, Body: "body of " + msg}}
}

// taskIDs are the event ids of tasks, in order.
func taskIDs(tasks []inbox.Task) []int64 {
	ids := make([]int64, len(tasks))
	for i, t := range tasks {
		ids[i] = t.Delivery.EventID
	}
	return ids
}

func testDeliveries(b *bundle) {
	ids := b.add(item("a"), item("b"))
	if got := b.deliveries(ids...); len(got) != 0 {
		b.t.Fatalf("deliveries before processing: %v", got)
	}
	b.toDeliver(ids[0], "app", "audit")
	b.status(ids[0], inbox.StatusDelivering)
	got := b.deliveries(ids...)
	if !sameKeys(got, ids[0]) || len(got[ids[0]]) != 2 {
		b.t.Fatalf("deliveries: %v, want app and audit of event %d", got, ids[0])
	}
	for _, d := range got[ids[0]] {
		if d.Status != inbox.DeliveryPending || d.Attempts != 0 {
			b.t.Errorf("new delivery %+v, want pending with no attempts", d)
		}
	}
	audit := inbox.Lane{Source: "shop", Destination: "audit"}
	tasks := b.dispatch("d1", app, 10).Tasks
	if len(tasks) != 1 || tasks[0].Event.ID != ids[0] || string(tasks[0].Event.Payload) == "" {
		b.t.Fatalf("leased %+v, want event %d with its payload", tasks, ids[0])
	}
	retry := b.ended(ids[0], "app", inbox.DeliveryPending, 503, "busy")
	retry.NextAttemptAt = start.Add(time.Minute)
	if out := b.dispatch("d1", app, 10, retry); len(out.Tasks) != 0 || len(out.Settled) != 0 {
		b.t.Fatalf("after a retry: %+v, want nothing due and nothing settled", out)
	}
	d := b.deliveries(ids[0])[ids[0]]["app"]
	if d.Status != inbox.DeliveryPending || d.Attempts != 1 || d.Code != 503 || !d.NextAttemptAt.Equal(start.Add(time.Minute)) {
		b.t.Errorf("after a retry: %+v", d)
	}
	b.clock.Advance(time.Minute)
	if tasks := b.dispatch("d1", app, 10).Tasks; len(tasks) != 1 || tasks[0].Delivery.Attempts != 1 {
		b.t.Fatalf("due again: %+v, want the delivery with its 1 attempt", tasks)
	}
	if out := b.dispatch("d1", app, 10, b.ended(ids[0], "app", inbox.DeliveryDelivered, 204, "")); len(out.Settled) != 0 {
		b.t.Fatalf("settled %+v while audit is pending", out.Settled)
	}
	b.status(ids[0], inbox.StatusDelivering)
	if tasks := b.dispatch("d2", audit, 10).Tasks; len(tasks) != 1 {
		b.t.Fatalf("audit lane leased %v", taskIDs(tasks))
	}
	out := b.dispatch("d2", audit, 10, b.ended(ids[0], "audit", inbox.DeliveryFailed, 410, "gone"))
	want := []inbox.Settled{{ID: ids[0], Source: "shop", Status: inbox.StatusDead, Error: "audit: gone"}}
	if !slices.Equal(out.Settled, want) {
		b.t.Fatalf("settled %+v, want %+v", out.Settled, want)
	}
	if e := b.get(ids[0]); e.Status != inbox.StatusDead || e.LastError != "audit: gone" {
		b.t.Errorf("event after audit failed for good: %s %q", e.Status, e.LastError)
	}
	log, err := b.store.Attempts(b.ctx, ids[0])
	if err != nil {
		b.t.Fatal(err)
	}
	var codes []int
	for _, a := range log {
		codes = append(codes, a.Code)
	}
	if !slices.Equal(codes, []int{503, 204, 410}) || log[0].Body != "body of busy" || log[0].Duration != 3*time.Millisecond {
		b.t.Errorf("attempt log %+v, want 503, 204, 410 with bodies and durations", log)
	}
}

func testFinishWithoutDestinations(b *bundle) {
	id := b.add(item("a"))[0]
	b.toDeliver(id)
	b.status(id, inbox.StatusProcessed)
	if got := b.deliveries(id); len(got) != 0 {
		b.t.Errorf("deliveries of an event for no destination: %v", got)
	}
}

func testDispatchConcurrent(b *bundle) {
	const events = 60
	items := make([]inbox.Item, events)
	for i := range items {
		items[i] = item(string(rune('A' + i)))
	}
	ids := b.add(items...)
	evs := b.lease("processor", events)
	results := make([]inbox.Result, len(evs))
	for i, e := range evs {
		results[i] = inbox.Result{ID: e.ID, Status: inbox.StatusProcessed, Destinations: []string{"app"}}
	}
	b.finish("processor", results...)
	var (
		mu   sync.Mutex
		seen = map[int64]int{}
		wg   sync.WaitGroup
	)
	for w := range 6 {
		owner := string(rune('a' + w))
		wg.Go(func() {
			var done []inbox.Done
			for {
				out, err := b.store.Dispatch(b.ctx, owner, app, done, 4, lease)
				if err != nil {
					b.t.Error(err)
					return
				}
				if len(out.Lost) > 0 {
					b.t.Errorf("%s lost %v under live leases", owner, out.Lost)
				}
				done = done[:0]
				if len(out.Tasks) == 0 {
					return
				}
				mu.Lock()
				for _, t := range out.Tasks {
					seen[t.Delivery.EventID]++
					done = append(done, b.ended(t.Delivery.EventID, "app", inbox.DeliveryDelivered, 200, ""))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if seen[id] != 1 {
			b.t.Errorf("event %d leased %d times by concurrent dispatchers, want once", id, seen[id])
		}
		b.status(id, inbox.StatusProcessed)
	}
}

// testDispatchFailureStaysItsOwn records, in one dispatch of one lane,
// attempts of which one failed for good among deliveries: each attempt
// changes its own delivery and event only.
func testDispatchFailureStaysItsOwn(b *bundle) {
	ids := b.add(item("a"), item("b"), item("c"), item("d"))
	evs := b.lease("processor", len(ids))
	results := make([]inbox.Result, len(evs))
	for i, e := range evs {
		results[i] = inbox.Result{ID: e.ID, Status: inbox.StatusProcessed, Destinations: []string{"app"}}
	}
	b.finish("processor", results...)
	if got := taskIDs(b.dispatch("d", app, len(ids)).Tasks); !slices.Equal(got, ids) {
		b.t.Fatalf("leased %v, want %v in one dispatch", got, ids)
	}
	refused := ids[1]
	var done []inbox.Done
	for _, id := range ids {
		if id == refused {
			done = append(done, b.ended(id, "app", inbox.DeliveryFailed, 422, "refused"))
		} else {
			done = append(done, b.ended(id, "app", inbox.DeliveryDelivered, 204, ""))
		}
	}
	out := b.dispatch("d", app, 0, done...)
	if len(out.Lost) != 0 {
		b.t.Errorf("lost %v of the dispatcher's own deliveries", out.Lost)
	}
	var want []inbox.Settled
	for _, id := range ids {
		st := inbox.Settled{ID: id, Source: "shop", Status: inbox.StatusProcessed}
		if id == refused {
			st.Status, st.Error = inbox.StatusDead, "app: refused"
		}
		want = append(want, st)
	}
	slices.SortFunc(out.Settled, func(x, y inbox.Settled) int { return cmp.Compare(x.ID, y.ID) })
	if !slices.Equal(out.Settled, want) {
		b.t.Errorf("settled %+v, want %+v", out.Settled, want)
	}
	got := b.deliveries(ids...)
	for i, id := range ids {
		d, status, code := got[id]["app"], inbox.DeliveryDelivered, 204
		if id == refused {
			status, code = inbox.DeliveryFailed, 422
		}
		if d.Status != status || d.Attempts != 1 || d.Code != code {
			b.t.Errorf("delivery of event %d: %s, %d attempts, code %d; want %s, 1, %d", id, d.Status, d.Attempts, d.Code, status, code)
		}
		if e := b.get(id); e.Status != want[i].Status {
			b.t.Errorf("event %d is %s, want %s", id, e.Status, want[i].Status)
		}
		if log, err := b.store.Attempts(b.ctx, id); err != nil || len(log) != 1 || log[0].Code != code {
			b.t.Errorf("attempt log of event %d: %+v, %v; want its one attempt, %d", id, log, err, code)
		}
	}
}

func testDispatchLost(b *bundle) {
	id := b.add(item("a"))[0]
	b.toDeliver(id, "app")
	if got := taskIDs(b.dispatch("d1", app, 1).Tasks); !slices.Equal(got, []int64{id}) {
		b.t.Fatalf("d1 leased %v", got)
	}
	if got := b.dispatch("d2", app, 1).Tasks; len(got) != 0 {
		b.t.Fatalf("d2 leased %v while d1 holds it", taskIDs(got))
	}
	b.clock.Advance(lease)
	if got := taskIDs(b.dispatch("d2", app, 1).Tasks); !slices.Equal(got, []int64{id}) {
		b.t.Fatalf("d2 after d1's lease expired: %v", got)
	}
	out := b.dispatch("d1", app, 1, b.ended(id, "app", inbox.DeliveryFailed, 400, "late"))
	if !slices.Equal(out.Lost, []int64{id}) || len(out.Settled) != 0 {
		b.t.Fatalf("d1's late result: %+v, want it lost", out)
	}
	if d := b.deliveries(id)[id]["app"]; d.Status != inbox.DeliveryPending || d.Attempts != 0 {
		b.t.Errorf("after a lost result: %+v, want untouched", d)
	}
	out = b.dispatch("d2", app, 1, b.ended(id, "app", inbox.DeliveryDelivered, 200, ""))
	if len(out.Lost) != 0 || len(out.Settled) != 1 || out.Settled[0].Status != inbox.StatusProcessed {
		b.t.Fatalf("d2's result: %+v, want the event processed", out)
	}
	if log, err := b.store.Attempts(b.ctx, id); err != nil || len(log) != 2 {
		b.t.Errorf("attempt log %+v, %v; want both attempts, the lost one too", log, err)
	}
}

// testDispatchTwice records two attempts of one delivery in one dispatch
// (its lease ran out while the first was in flight, and the same lane
// leased it again): the first ends the lease, so the second is lost, as
// it would be recorded in a dispatch of its own. Both are in the log.
func testDispatchTwice(b *bundle) {
	id := b.add(item("a"))[0]
	b.toDeliver(id, "app")
	b.dispatch("d", app, 1)
	b.clock.Advance(lease)
	if got := taskIDs(b.dispatch("d", app, 1).Tasks); !slices.Equal(got, []int64{id}) {
		b.t.Fatalf("leased again after the lease ran out: %v", got)
	}
	retry := b.ended(id, "app", inbox.DeliveryPending, 503, "busy")
	retry.NextAttemptAt = b.clock.Now().Add(time.Minute)
	out := b.dispatch("d", app, 0, retry, b.ended(id, "app", inbox.DeliveryDelivered, 200, ""))
	if !slices.Equal(out.Lost, []int64{id}) || len(out.Settled) != 0 {
		b.t.Fatalf("two attempts of one delivery: %+v, want the second lost", out)
	}
	if d := b.deliveries(id)[id]["app"]; d.Status != inbox.DeliveryPending || d.Attempts != 1 || d.Code != 503 {
		b.t.Errorf("delivery %+v, want the first attempt's retry: pending, 1 attempt, 503", d)
	}
	if log, err := b.store.Attempts(b.ctx, id); err != nil || len(log) != 2 || log[0].Code != 503 || log[1].Code != 200 {
		b.t.Errorf("attempt log %+v, %v; want both attempts in order", log, err)
	}
}

func testFinishLost(b *bundle) {
	id := b.add(item("a"))[0]
	b.lease("w1", 1)
	err := b.store.Finish(b.ctx, "w2", []inbox.Result{{ID: id, Status: inbox.StatusProcessed, Destinations: []string{"app"}}})
	var lost *inbox.LostError
	if !errors.Is(err, inbox.ErrNotOwner) || !errors.As(err, &lost) || !slices.Equal(lost.IDs, []int64{id}) {
		b.t.Fatalf("Finish by a non-owner: %v, want a LostError naming %d", err, id)
	}
	if got := b.deliveries(id); len(got) != 0 {
		b.t.Errorf("a lost finish opened deliveries: %v", got)
	}
}

func testReplayDeliveries(b *bundle) {
	ids := b.add(item("a"), item("b"))
	audit := inbox.Lane{Source: "shop", Destination: "audit"}
	b.toDeliver(ids[0], "app", "audit")
	b.dispatch("d", app, 1)
	b.dispatch("d", app, 1, b.ended(ids[0], "app", inbox.DeliveryDelivered, 200, ""))
	b.dispatch("d", audit, 1)
	b.dispatch("d", audit, 1, b.ended(ids[0], "audit", inbox.DeliveryFailed, 410, "gone"))
	b.status(ids[0], inbox.StatusDead)

	b.dispatch("d", audit, 0)
	b.toDeliver(ids[1], "app")
	b.dispatch("d", app, 1)
	if n := b.replay(inbox.ReplayFilter{}); n != 1 {
		b.t.Fatalf("replayed %d, want 1: event %d has a delivery under lease", n, ids[1])
	}
	got := b.deliveries(ids[0])[ids[0]]
	if d := got["app"]; d.Status != inbox.DeliveryDelivered || d.Attempts != 1 {
		b.t.Errorf("delivered destination after replay: %+v, want kept", d)
	}
	if _, ok := got["audit"]; ok {
		b.t.Errorf("failed destination after replay: %+v, want it to start over", got["audit"])
	}
	b.toDeliver(ids[0], "app", "audit")
	if d := b.deliveries(ids[0])[ids[0]]; d["audit"].Status != inbox.DeliveryPending || d["audit"].Attempts != 0 || d["app"].Status != inbox.DeliveryDelivered {
		b.t.Errorf("deliveries after the replayed event was processed again: %+v", d)
	}
	if log, err := b.store.Attempts(b.ctx, ids[0]); err != nil || len(log) != 2 {
		b.t.Errorf("attempt log after replay: %+v, %v; want both attempts kept", log, err)
	}
	b.dispatch("d", audit, 1)
	b.dispatch("d", audit, 0, b.ended(ids[0], "audit", inbox.DeliveryDelivered, 200, ""))
	b.status(ids[0], inbox.StatusProcessed)

	b.replay(inbox.ReplayFilter{IDs: []int64{ids[0]}, Redeliver: true, Destination: "audit"})
	if d := b.deliveries(ids[0])[ids[0]]; len(d) != 1 || d["app"].Status != inbox.DeliveryDelivered {
		b.t.Errorf("after redelivering to audit only: %+v, want app's record kept", d)
	}
	b.replay(inbox.ReplayFilter{IDs: []int64{ids[0]}, Redeliver: true})
	if d := b.deliveries(ids[0]); len(d) != 0 {
		b.t.Errorf("after redelivering to every destination: %+v, want none kept", d)
	}
}

func testReplayedEventAlreadyDelivered(b *bundle) {
	id := b.add(item("a"))[0]
	b.toDeliver(id, "app")
	b.dispatch("d", app, 1)
	b.dispatch("d", app, 0, b.ended(id, "app", inbox.DeliveryDelivered, 200, ""))
	b.replay(inbox.ReplayFilter{})
	b.toDeliver(id, "app")
	b.status(id, inbox.StatusProcessed)
	if got := b.dispatch("d", app, 1).Tasks; len(got) != 0 {
		b.t.Errorf("a delivered destination is due again after replay: %v", taskIDs(got))
	}
}

func testLaneStats(b *bundle) {
	ids := b.add(item("a"), item("b"))
	b.toDeliver(ids[0], "app", "audit")
	b.clock.Advance(time.Minute)
	b.toDeliver(ids[1], "app")
	until := start.Add(time.Hour)
	if err := b.store.SetLaneState(b.ctx, inbox.LaneState{Lane: app, State: inbox.LanePaused, Failures: 5,
		Until: until, LastError: "timed out", Changed: start}); err != nil {
		b.t.Fatal(err)
	}
	st := b.stats()
	if st.Pending != 2 || !st.OldestPending.Equal(start) {
		b.t.Errorf("pending %d, oldest %v; want the 2 delivering events, oldest at %v", st.Pending, st.OldestPending, start)
	}
	if n := st.Sources["shop"].ByStatus[inbox.StatusDelivering]; n != 2 {
		b.t.Errorf("delivering count %d, want 2", n)
	}
	want := []inbox.LaneState{
		{Lane: app, State: inbox.LanePaused, Failures: 5, Until: until, LastError: "timed out", Changed: start, Pending: 2},
		{Lane: inbox.Lane{Source: "shop", Destination: "audit"}, State: inbox.LaneHealthy, Pending: 1},
	}
	if len(st.Lanes) != 2 {
		b.t.Fatalf("lanes %+v, want %+v", st.Lanes, want)
	}
	slices.SortFunc(want, func(x, y inbox.LaneState) int { return strings.Compare(x.Destination, y.Destination) })
	for i, l := range st.Lanes {
		w := want[i]
		if l.Lane != w.Lane || l.State != w.State || l.Failures != w.Failures || !l.Until.Equal(w.Until) ||
			l.LastError != w.LastError || !l.Changed.Equal(w.Changed) || l.Pending != w.Pending {
			b.t.Errorf("lane %d: %+v, want %+v", i, l, w)
		}
	}
}
