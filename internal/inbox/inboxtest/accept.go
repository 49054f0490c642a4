package inboxtest

import (
	"bytes"
	"maps"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

func testAcceptNew(b *bundle) {
	a, c := item("a", entity("ch_1", 5, "paid")), item("c")
	out := b.accept(a, c)
	for i, o := range out {
		if o.Status != dedupe.New || o.ID <= 0 {
			b.t.Fatalf("outcome %d: %+v, want new with an id", i, o)
		}
		if !o.FirstSeen.Equal(start) || !o.Expires.Equal(start.Add(window)) {
			b.t.Errorf("outcome %d: first seen %v, expires %v; want %v and %v", i, o.FirstSeen, o.Expires, start, start.Add(window))
		}
	}
	if out[0].ID == out[1].ID {
		b.t.Fatalf("both events got id %d", out[0].ID)
	}
	got, want := b.get(out[0].ID), a.Event
	if got.ID != out[0].ID || got.Hash != want.Hash || got.Scope != want.Scope || got.Source != want.Source ||
		got.Provider != want.Provider || got.Tenant != want.Tenant || got.EventID != want.EventID || got.Type != want.Type ||
		got.EntityType != want.EntityType || got.EntityID != want.EntityID || got.EntityVersion != want.EntityVersion ||
		got.EntityOrder != want.EntityOrder || got.EntityState != want.EntityState ||
		!bytes.Equal(got.Payload, want.Payload) || !maps.Equal(got.Headers, want.Headers) {
		b.t.Errorf("stored event\n%+v\nwant the accepted\n%+v", got, want)
	}
	if !got.ReceivedAt.Equal(start) || got.Status != inbox.StatusReceived || got.Attempts != 0 ||
		!got.NextAttemptAt.IsZero() || !got.ProcessedAt.IsZero() || got.LastError != "" || got.Applied != nil {
		b.t.Errorf("new event: received %v, status %s, attempts %d, next %v, processed %v, error %q, applied %v",
			got.ReceivedAt, got.Status, got.Attempts, got.NextAttemptAt, got.ProcessedAt, got.LastError, got.Applied)
	}
}

func testAcceptDuplicate(b *bundle) {
	first := b.add(item("a"))[0]
	b.clock.Advance(time.Second)
	out := b.accept(item("a"))
	if out[0].Status != dedupe.Duplicate || out[0].ID != 0 {
		b.t.Fatalf("second delivery: %+v, want duplicate without an id", out[0])
	}
	if !out[0].FirstSeen.Equal(start) {
		b.t.Errorf("duplicate first seen %v, want the first delivery's %v", out[0].FirstSeen, start)
	}
	if got := b.received(); len(got) != 1 || got[0] != first {
		b.t.Errorf("stored events %v, want only %d", got, first)
	}
}

func testAcceptDuplicateAcrossBatches(b *bundle) {
	b.add(item("a"), item("b"))
	out := b.accept(item("b"), item("c"), item("b", from("other")))
	if out[0].Status != dedupe.Duplicate || out[1].Status != dedupe.New || out[2].Status != dedupe.New {
		b.t.Fatalf("second batch: %s, %s, %s; want duplicate, new, new (another source's b)", out[0].Status, out[1].Status, out[2].Status)
	}
	if got := b.received(); len(got) != 4 {
		b.t.Errorf("%d stored events, want 4", len(got))
	}
}

func testAcceptWindowExpiry(b *bundle) {
	first := b.add(item("a"))[0]
	b.clock.Advance(window - time.Second)
	if out := b.accept(item("a")); out[0].Status != dedupe.Duplicate {
		b.t.Fatalf("within the window: %s, want duplicate", out[0].Status)
	}
	b.clock.Advance(2 * time.Second)
	out := b.accept(item("a"))
	if out[0].Status != dedupe.New || out[0].ID == first {
		b.t.Fatalf("after the window: %+v, want new with a new id (first was %d)", out[0], first)
	}
}

func testGetUnknown(b *bundle) {
	_, err := b.store.Get(b.ctx, 12345)
	notFound(b.t, "Get of an unknown id", err)
}

func testListFilters(b *bundle) {
	ids := b.add(item("a"), item("b", from("other")), item("c", of("globex")), item("d"))
	b.finish("w", inbox.Result{ID: b.leaseIDs("w", 1)[0], Status: inbox.StatusDead, Error: "bad"})
	list := func(f inbox.Filter, want ...int64) {
		b.t.Helper()
		evs, err := b.store.List(b.ctx, f)
		if err != nil {
			b.t.Fatalf("List(%+v): %v", f, err)
		}
		got := idsOf(evs)
		if len(got) != len(want) {
			b.t.Errorf("List(%+v) = %v, want %v", f, got, want)
			return
		}
		for i := range got {
			if got[i] != want[i] {
				b.t.Errorf("List(%+v) = %v, want %v", f, got, want)
				return
			}
		}
	}
	list(inbox.Filter{}, ids[3], ids[2], ids[1], ids[0])
	list(inbox.Filter{Source: "shop"}, ids[3], ids[2], ids[0])
	list(inbox.Filter{Tenant: "globex"}, ids[2])
	list(inbox.Filter{Status: inbox.StatusDead}, ids[0])
	list(inbox.Filter{Status: inbox.StatusReceived, Source: "shop"}, ids[3], ids[2])
	list(inbox.Filter{BeforeID: ids[2], Limit: 1}, ids[1])
	list(inbox.Filter{Limit: 2}, ids[3], ids[2])
}
