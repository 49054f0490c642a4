package cli_test

import (
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/inboxfill"
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

// route finishes event id processed for dests (inboxfill.Route); the
// clock then moves on by a millisecond, past the other events' lease.
func (d *opsDB) route(id int64, dests ...string) {
	d.t.Helper()
	defer d.clock.Advance(time.Millisecond)
	inboxfill.Route(d.t, d.store, id, dests...)
}

// attempt records one attempt on event id to source's dest, 25 ms long,
// answered code (0: none) with msg as its error and "answer: msg" as its
// body (none without a msg), that ends in st (a pending one is due again a
// minute later); the clock then moves on by a second.
func (d *opsDB) attempt(source, dest string, id int64, st inbox.DeliveryStatus, code int, msg string) {
	d.t.Helper()
	defer d.clock.Advance(time.Second)
	a := inbox.Attempt{EventID: id, At: d.clock.Now(), Duration: 25 * time.Millisecond, Code: code, Error: msg}
	if msg != "" {
		a.Body = "answer: " + msg
	}
	inboxfill.Attempt(d.t, d.store, inbox.Lane{Source: source, Destination: dest}, a, st, d.clock.Now().Add(time.Minute))
}
