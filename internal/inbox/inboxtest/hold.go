package inboxtest

import (
	"slices"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// A held lane leases nothing until it is released, whatever the circuit
// records meanwhile; Stats says it is held; other lanes go on.
func testHoldLane(b *bundle) {
	h := capability[inbox.LaneHolder](b)
	audit := inbox.Lane{Source: "shop", Destination: "audit"}
	ids := b.add(item("a"))
	if err := h.HoldLane(b.ctx, app, true); err != nil {
		b.t.Fatal(err)
	}
	b.toDeliver(ids[0], "app", "audit")
	if tasks := b.dispatch("d", app, 10).Tasks; len(tasks) != 0 {
		b.t.Errorf("a held lane leased %v", taskIDs(tasks))
	}
	if tasks := b.dispatch("d", audit, 10).Tasks; !slices.Equal(taskIDs(tasks), ids) {
		b.t.Errorf("the other lane leased %v, want %v", taskIDs(tasks), ids)
	}
	if err := b.store.SetLaneState(b.ctx, inbox.LaneState{Lane: app, State: inbox.LaneFailing, Failures: 1, Changed: start}); err != nil {
		b.t.Fatal(err)
	}
	lanes := b.stats().Lanes
	i := slices.IndexFunc(lanes, func(l inbox.LaneState) bool { return l.Lane == app })
	if i < 0 || !lanes[i].Held || lanes[i].State != inbox.LaneFailing || lanes[i].Pending != 1 {
		b.t.Fatalf("lanes %+v: want app held, failing, 1 pending", lanes)
	}
	if j := slices.IndexFunc(lanes, func(l inbox.LaneState) bool { return l.Lane == audit }); j < 0 || lanes[j].Held {
		b.t.Errorf("lanes %+v: want audit not held", lanes)
	}
	if tasks := b.dispatch("d", app, 10).Tasks; len(tasks) != 0 {
		b.t.Errorf("a held lane leased %v once the circuit recorded a state", taskIDs(tasks))
	}

	if err := h.HoldLane(b.ctx, app, false); err != nil {
		b.t.Fatal(err)
	}
	if tasks := b.dispatch("d", app, 10).Tasks; !slices.Equal(taskIDs(tasks), ids) {
		b.t.Errorf("the released lane leased %v, want %v", taskIDs(tasks), ids)
	}
	lanes = b.stats().Lanes
	if i := slices.IndexFunc(lanes, func(l inbox.LaneState) bool { return l.Lane == app }); i < 0 || lanes[i].Held || lanes[i].State != inbox.LaneFailing {
		b.t.Errorf("lanes %+v: want app released, its circuit's state kept", lanes)
	}
}

// RecentAttempts reads a destination's attempts, newest first, across
// events and sources, and none of another destination's.
func testRecentAttempts(b *bundle) {
	log := capability[inbox.AttemptLog](b)
	other := inbox.Lane{Source: "other", Destination: "app"}
	ids := b.add(item("a"), item("b"), item("c", from("other")))
	b.lease("w", 3)
	b.finish("w",
		inbox.Result{ID: ids[0], Status: inbox.StatusProcessed, Destinations: []string{"app", "audit"}},
		inbox.Result{ID: ids[1], Status: inbox.StatusProcessed, Destinations: []string{"app"}},
		inbox.Result{ID: ids[2], Status: inbox.StatusProcessed, Destinations: []string{"app"}})
	b.dispatch("d", app, 2)
	b.dispatch("d", app, 0, b.ended(ids[0], "app", inbox.DeliveryPending, 503, "unavailable"))
	b.clock.Advance(time.Second)
	b.dispatch("d", app, 0, b.ended(ids[1], "app", inbox.DeliveryDelivered, 204, ""))
	b.dispatch("d", inbox.Lane{Source: "shop", Destination: "audit"}, 1)
	b.dispatch("d", inbox.Lane{Source: "shop", Destination: "audit"}, 0, b.ended(ids[0], "audit", inbox.DeliveryDelivered, 200, ""))
	b.clock.Advance(time.Second)
	b.dispatch("d", other, 1)
	b.dispatch("d", other, 0, b.ended(ids[2], "app", inbox.DeliveryDelivered, 202, ""))

	got, err := log.RecentAttempts(b.ctx, "app", 2)
	if err != nil {
		b.t.Fatal(err)
	}
	if len(got) != 2 || got[0].EventID != ids[2] || got[0].Code != 202 || got[1].EventID != ids[1] || got[1].Code != 204 ||
		!got[0].At.Equal(start.Add(2*time.Second)) || got[0].Duration != 3*time.Millisecond || got[0].Destination != "app" {
		b.t.Errorf("newest 2 of app: %+v, want event %d's 202 at %v, then event %d's 204", got, ids[2], start.Add(2*time.Second), ids[1])
	}
	got, err = log.RecentAttempts(b.ctx, "app", 10)
	if err != nil {
		b.t.Fatal(err)
	}
	if len(got) != 3 || got[2].EventID != ids[0] || got[2].Error != "unavailable" || got[2].Body != "body of unavailable" {
		b.t.Errorf("every attempt of app: %+v, want 3, the oldest event %d's 503", got, ids[0])
	}
	if got, err := log.RecentAttempts(b.ctx, "nowhere", 10); err != nil || len(got) != 0 {
		b.t.Errorf("attempts of a destination never called: %+v, %v", got, err)
	}
}

// ReplayFilter.FailedTo replays the events whose delivery to that
// destination failed, and no event another destination failed.
func testReplayFailedTo(b *bundle) {
	audit := inbox.Lane{Source: "shop", Destination: "audit"}
	ids := b.add(item("a"), item("b"), item("c"))
	b.lease("w", 3)
	b.finish("w",
		inbox.Result{ID: ids[0], Status: inbox.StatusProcessed, Destinations: []string{"app", "audit"}},
		inbox.Result{ID: ids[1], Status: inbox.StatusProcessed, Destinations: []string{"app", "audit"}},
		inbox.Result{ID: ids[2], Status: inbox.StatusDead, Error: "invalid"})
	b.dispatch("d", app, 2)
	b.dispatch("d", app, 0,
		b.ended(ids[0], "app", inbox.DeliveryFailed, 400, "refused"),
		b.ended(ids[1], "app", inbox.DeliveryDelivered, 204, ""))
	b.dispatch("d", audit, 2)
	b.dispatch("d", audit, 0,
		b.ended(ids[0], "audit", inbox.DeliveryDelivered, 200, ""),
		b.ended(ids[1], "audit", inbox.DeliveryFailed, 400, "refused"))
	for _, id := range ids {
		b.status(id, inbox.StatusDead)
	}

	if n := b.replay(inbox.ReplayFilter{Dead: true, FailedTo: "app"}); n != 1 {
		b.t.Fatalf("replayed %d, want 1: the event app refused", n)
	}
	b.status(ids[0], inbox.StatusReceived)
	b.status(ids[1], inbox.StatusDead)
	b.status(ids[2], inbox.StatusDead)
	got := b.deliveries(ids[0])[ids[0]]
	if _, ok := got["app"]; ok || got["audit"].Status != inbox.DeliveryDelivered {
		b.t.Errorf("deliveries of the replayed event: %+v, want app's failed one gone and audit's delivery kept", got)
	}
}
