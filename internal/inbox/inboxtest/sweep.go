package inboxtest

import (
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

func testSweep(b *bundle) {
	long := item("long")
	long.Window = 48 * time.Hour
	ids := sorted(b.add(item("old"), item("dead"), item("young"), long)...)
	old, dead, young, pending := ids[0], ids[1], ids[2], ids[3]
	b.lease("w1", 2)
	b.finish("w1",
		inbox.Result{ID: old, Status: inbox.StatusProcessed},
		inbox.Result{ID: dead, Status: inbox.StatusDead, Error: "bad"})
	b.record(inbox.Delivery{EventID: old, Destination: "app", Status: inbox.DeliveryDelivered, Code: 200})
	b.clock.Advance(2 * time.Hour)
	b.lease("w2", 1)
	b.finish("w2", inbox.Result{ID: young, Status: inbox.StatusProcessed})
	b.record(inbox.Delivery{EventID: young, Destination: "app", Status: inbox.DeliveryDelivered, Code: 200})

	res, err := b.store.Sweep(b.ctx, start.Add(time.Hour))
	if err != nil {
		b.t.Fatal(err)
	}
	if res != (inbox.SweepResult{Keys: 3, Events: 1}) {
		b.t.Errorf("Sweep = %+v, want the 3 expired keys and the 1 old processed event", res)
	}
	_, err = b.store.Get(b.ctx, old)
	notFound(b.t, "Get of a swept event", err)
	b.status(dead, inbox.StatusDead)
	b.status(young, inbox.StatusProcessed)
	b.status(pending, inbox.StatusReceived)
	if got := b.deliveries(old, young); !sameKeys(got, young) {
		b.t.Errorf("deliveries after sweep: %v, want only the young event's", got)
	}
	if res, err := b.store.Sweep(b.ctx, start.Add(time.Hour)); err != nil || res != (inbox.SweepResult{}) {
		b.t.Errorf("second Sweep = %+v, %v; want nothing left to remove", res, err)
	}
}
