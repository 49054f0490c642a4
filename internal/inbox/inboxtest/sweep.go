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
		inbox.Result{ID: old, Status: inbox.StatusProcessed, Destinations: []string{"app"}},
		inbox.Result{ID: dead, Status: inbox.StatusDead, Error: "bad"})
	b.dispatch("d", app, 1)
	b.dispatch("d", app, 0, b.ended(old, "app", inbox.DeliveryDelivered, 200, ""))
	b.clock.Advance(2 * time.Hour)
	b.lease("w2", 1)
	b.finish("w2", inbox.Result{ID: young, Status: inbox.StatusProcessed, Destinations: []string{"app"}})
	b.dispatch("d", app, 1)
	b.dispatch("d", app, 0, b.ended(young, "app", inbox.DeliveryDelivered, 200, ""))

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
	for id, want := range map[int64]int{old: 0, young: 1} {
		if log, err := b.store.Attempts(b.ctx, id); err != nil || len(log) != want {
			b.t.Errorf("attempt log of %d after sweep: %d entries, %v; want %d", id, len(log), err, want)
		}
	}
	if res, err := b.store.Sweep(b.ctx, start.Add(time.Hour)); err != nil || res != (inbox.SweepResult{}) {
		b.t.Errorf("second Sweep = %+v, %v; want nothing left to remove", res, err)
	}
}
