package cli_test

import (
	"slices"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// acceptEvent stores e, keyed by its tenant, source and event id, with a
// one-hour dedupe window, and returns its id.
func (d *opsDB) acceptEvent(e inbox.Event) int64 {
	d.t.Helper()
	k := dedupe.Key{Tenant: e.Tenant, Provider: e.Source, ObjectType: "charge", EventID: e.EventID}
	e.Hash, e.Scope = k.Hash(), k.Scope()
	out, err := d.store.Accept(d.t.Context(), []inbox.Item{{Window: time.Hour, Event: e}})
	if err != nil {
		d.t.Fatal(err)
	}
	if out[0].Status != dedupe.New {
		d.t.Fatalf("event %s is a %s", e.EventID, out[0].Status)
	}
	return out[0].ID
}

// route leases every due event, applies event id and finishes it
// processed for dests, so that it is delivering with a pending delivery to
// each; the clock then moves on by a millisecond, past the others' lease.
func (d *opsDB) route(id int64, dests ...string) {
	d.t.Helper()
	defer d.clock.Advance(time.Millisecond)
	ctx := d.t.Context()
	evs, err := d.store.Lease(ctx, "test", 1000, time.Nanosecond)
	if err != nil {
		d.t.Fatal(err)
	}
	i := slices.IndexFunc(evs, func(e inbox.Event) bool { return e.ID == id })
	if i < 0 {
		d.t.Fatalf("event %d is not due", id)
	}
	if _, err := d.store.Apply(ctx, evs[i:i+1]); err != nil {
		d.t.Fatal(err)
	}
	if err := d.store.Finish(ctx, "test", []inbox.Result{{ID: id, Status: inbox.StatusProcessed, Destinations: dests}}); err != nil {
		d.t.Fatal(err)
	}
}

// attempt leases the due deliveries of source's destination dest and
// records one attempt on event id, 25 ms long, answered code (0: none)
// with msg as its error and "answer: msg" as its body (none without a
// msg), that ends in st (a
// pending one is due again a minute later); the clock then moves on by a
// second.
func (d *opsDB) attempt(source, dest string, id int64, st inbox.DeliveryStatus, code int, msg string) {
	d.t.Helper()
	defer d.clock.Advance(time.Second)
	ctx, lane := d.t.Context(), inbox.Lane{Source: source, Destination: dest}
	got, err := d.store.Dispatch(ctx, "test", lane, nil, 1000, time.Nanosecond)
	if err != nil {
		d.t.Fatal(err)
	}
	if !slices.ContainsFunc(got.Tasks, func(task inbox.Task) bool { return task.Event.ID == id }) {
		d.t.Fatalf("the delivery of event %d to %s is not due", id, dest)
	}
	done := inbox.Done{Status: st, Attempt: inbox.Attempt{EventID: id, Destination: dest, At: d.clock.Now(),
		Duration: 25 * time.Millisecond, Code: code, Error: msg}}
	if msg != "" {
		done.Attempt.Body = "answer: " + msg
	}
	if st == inbox.DeliveryPending {
		done.NextAttemptAt = d.clock.Now().Add(time.Minute)
	}
	if got, err = d.store.Dispatch(ctx, "test", lane, []inbox.Done{done}, 0, 0); err != nil || len(got.Lost) > 0 {
		d.t.Fatalf("record the attempt: %v, lost %v", err, got.Lost)
	}
}
