package inboxtest

import (
	"errors"
	"slices"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// eventsOf returns the stored events of ids, as Apply receives them.
func (b *bundle) eventsOf(ids ...int64) []inbox.Event {
	b.t.Helper()
	evs := make([]inbox.Event, len(ids))
	for i, id := range ids {
		evs[i] = b.get(id)
	}
	return evs
}

// applied checks one Apply result.
func (b *bundle) applied(what string, got, want inbox.Applied) {
	b.t.Helper()
	if got != want {
		b.t.Errorf("%s: %+v, want %+v", what, got, want)
	}
}

// entityAt checks the stored charge id: its state, order and the event
// that wrote it.
func (b *bundle) entityAt(id, state string, order, event int64) {
	b.t.Helper()
	e := b.entityOf(id)
	want := time.Unix(order, 0).UTC().Format(time.RFC3339)
	if e.State != state || e.Order != order || e.Version != want || e.EventID != event {
		b.t.Errorf("entity %s: state %q, order %d, version %q, event %d; want %q, %d, %q, %d",
			id, e.State, e.Order, e.Version, e.EventID, state, order, want, event)
	}
}

func testApplyVersionGuard(b *bundle) {
	ids := b.add(
		item("open", entity("ch_1", 10, "open")),
		item("paid", entity("ch_1", 20, "paid")),
		item("older", entity("ch_1", 15, "void")),
		item("equal", entity("ch_1", 20, "refunded")),
		item("newer-same", entity("ch_1", 30, "refunded")),
	)
	first := inbox.Applied{Outcome: inbox.ApplyApplied, From: "", To: "open", Transition: true}
	b.applied("first event of an entity", b.apply(b.eventsOf(ids[0])...)[0], first)
	b.entityAt("ch_1", "open", 10, ids[0])
	if e := b.entityOf("ch_1"); !e.UpdatedAt.Equal(start) || e.Tenant != "acme" || e.Type != "charge" || e.ID != "ch_1" {
		b.t.Errorf("entity: %+v, want acme/charge/ch_1 updated at %v", e, start)
	}

	b.applied("newer event, new state", b.apply(b.eventsOf(ids[1])...)[0],
		inbox.Applied{Outcome: inbox.ApplyApplied, From: "open", To: "paid", Transition: true})
	b.entityAt("ch_1", "paid", 20, ids[1])

	stale := inbox.Applied{Outcome: inbox.ApplyStale, From: "paid", To: "paid"}
	b.applied("older event", b.apply(b.eventsOf(ids[2])...)[0], stale)
	b.entityAt("ch_1", "paid", 20, ids[1])

	// An equal version is not older: the later arrival is applied, and
	// recorded as a tie.
	tie := inbox.Applied{Outcome: inbox.ApplyApplied, From: "paid", To: "refunded", Transition: true, Tie: true}
	b.applied("equal version", b.apply(b.eventsOf(ids[3])...)[0], tie)
	b.entityAt("ch_1", "refunded", 20, ids[3])

	b.applied("newer event, same state", b.apply(b.eventsOf(ids[4])...)[0],
		inbox.Applied{Outcome: inbox.ApplyUnchanged, From: "refunded", To: "refunded"})
	b.entityAt("ch_1", "refunded", 30, ids[4])

	// A re-run (crash, replay) of the first event after the entity moved
	// on gets its recorded result, transition included, and changes
	// nothing.
	b.applied("first event again", b.apply(b.eventsOf(ids[0])...)[0], first)
	b.entityAt("ch_1", "refunded", 30, ids[4])
	for _, c := range []struct {
		what string
		id   int64
		want inbox.Applied
	}{{"first", ids[0], first}, {"stale", ids[2], stale}, {"tie", ids[3], tie}} {
		if got := b.get(c.id).Applied; got == nil || *got != c.want {
			b.t.Errorf("Get of the %s event: Applied %v, want %+v", c.what, got, c.want)
		}
	}
}

// testApplyTies: events of one entity with equal versions are applied in
// arrival order (inbox id), within a batch and across batches alike; each
// after the first is a tie, which changes the state (a transition) or
// not; only a strictly older version is stale; a re-run returns the
// recorded tie; List finds ties.
func testApplyTies(b *bundle) {
	ids := b.add(
		item("created", entity("ch_1", 10, "pending")),
		item("succeeded", entity("ch_1", 10, "paid")),
		item("updated", entity("ch_1", 10, "paid")),
	)
	// Handed over newest first, applied in arrival order.
	got := b.apply(b.eventsOf(ids[2], ids[1], ids[0])...)
	first := inbox.Applied{Outcome: inbox.ApplyApplied, To: "pending", Transition: true}
	changed := inbox.Applied{Outcome: inbox.ApplyApplied, From: "pending", To: "paid", Transition: true, Tie: true}
	same := inbox.Applied{Outcome: inbox.ApplyUnchanged, From: "paid", To: "paid", Tie: true}
	b.applied("the first event of the entity", got[2], first)
	b.applied("a tie with a new state", got[1], changed)
	b.applied("a tie with the same state", got[0], same)
	b.entityAt("ch_1", "paid", 10, ids[2])

	older := b.add(item("older", entity("ch_1", 9, "void")))[0]
	b.applied("an older version after ties", b.apply(b.eventsOf(older)...)[0],
		inbox.Applied{Outcome: inbox.ApplyStale, From: "paid", To: "paid"})
	b.entityAt("ch_1", "paid", 10, ids[2])

	b.applied("a tie again", b.apply(b.eventsOf(ids[1])...)[0], changed)
	b.entityAt("ch_1", "paid", 10, ids[2])
	if a := b.get(ids[1]).Applied; a == nil || *a != changed {
		b.t.Errorf("Get of the tie: Applied %v, want %+v", a, changed)
	}

	// Across batches applied out of arrival order (two workers, a retry):
	// the later arrival holds the entity, as it would in one batch; the
	// earlier one, applied last, is a tie that leaves the state as it is.
	late := b.add(
		item("ch_2 created", entity("ch_2", 5, "pending")),
		item("ch_2 succeeded", entity("ch_2", 5, "paid")),
	)
	b.applied("the later arrival first", b.apply(b.eventsOf(late[1])...)[0],
		inbox.Applied{Outcome: inbox.ApplyApplied, To: "paid", Transition: true})
	b.applied("the earlier arrival after it", b.apply(b.eventsOf(late[0])...)[0],
		inbox.Applied{Outcome: inbox.ApplyUnchanged, From: "paid", To: "paid", Tie: true})
	b.entityAt("ch_2", "paid", 5, late[1])

	b.listed("ties", inbox.Filter{Outcome: inbox.ApplyTie}, late[0], ids[2], ids[1])
	b.listed("ties of a source", inbox.Filter{Outcome: inbox.ApplyTie, Source: "other"})
	b.listed("applied, ties included", inbox.Filter{Outcome: inbox.ApplyApplied}, late[1], ids[1], ids[0])
}

func testApplyBatchInIDOrder(b *bundle) {
	ids := b.add(
		item("a", entity("ch_1", 1, "pending")),
		item("b", entity("ch_1", 2, "paid")),
		item("c", entity("ch_1", 3, "paid")),
		item("d"),
	)
	// Handed over newest first, applied oldest first; results follow the
	// order of the arguments.
	got := b.apply(b.eventsOf(ids[3], ids[2], ids[1], ids[0])...)
	b.applied("event without entity", got[0], inbox.Applied{Outcome: inbox.ApplyNone})
	b.applied("third", got[1], inbox.Applied{Outcome: inbox.ApplyUnchanged, From: "paid", To: "paid"})
	b.applied("second", got[2], inbox.Applied{Outcome: inbox.ApplyApplied, From: "pending", To: "paid", Transition: true})
	b.applied("first", got[3], inbox.Applied{Outcome: inbox.ApplyApplied, From: "", To: "pending", Transition: true})
	b.entityAt("ch_1", "paid", 3, ids[2])
	if a := b.get(ids[3]).Applied; a == nil || a.Outcome != inbox.ApplyNone {
		b.t.Errorf("event without entity: Applied %v, want none recorded", a)
	}
}

func testApplySeparateEntities(b *bundle) {
	ids := b.add(
		item("a", entity("ch_1", 5, "paid")),
		item("b", entity("ch_1", 1, "open"), of("globex")),
		item("c", entity("ch_1", 1, ""), func(e *inbox.Event) { e.EntityType = "refund" }),
	)
	got := b.apply(b.eventsOf(ids...)...)
	b.applied("acme's charge", got[0], inbox.Applied{Outcome: inbox.ApplyApplied, To: "paid", Transition: true})
	b.applied("globex's charge of the same id", got[1], inbox.Applied{Outcome: inbox.ApplyApplied, To: "open", Transition: true})
	b.applied("a new refund without state", got[2], inbox.Applied{Outcome: inbox.ApplyUnchanged})
	if e, err := b.store.Entity(b.ctx, "globex", "charge", "ch_1"); err != nil || e.State != "open" || e.EventID != ids[1] {
		b.t.Errorf("globex's charge: %+v, %v", e, err)
	}
	b.entityAt("ch_1", "paid", 5, ids[0])
}

func testEntityUnknown(b *bundle) {
	_, err := b.store.Entity(b.ctx, "acme", "charge", "ch_none")
	notFound(b.t, "Entity of an unknown id", err)
}

// testApplyFinish applies a leased batch and finishes it in one call:
// decide sees Apply's results in the batch's order, and the results it
// returns, for events applied or not, are recorded as Finish records
// them.
func testApplyFinish(b *bundle) {
	af := capability[inbox.ApplyFinisher](b)
	ids := b.add(item("open", entity("ch_1", 10, "open")), item("paid", entity("ch_1", 20, "paid")),
		item("other", entity("ch_2", 10, "open")), item("invalid"))
	evs := b.lease("w", len(ids))
	var seen []inbox.Applied
	err := af.ApplyFinish(b.ctx, "w", evs[:3], func(applied []inbox.Applied) ([]inbox.Result, error) {
		seen = applied
		return []inbox.Result{
			{ID: ids[0], Status: inbox.StatusProcessed},
			{ID: ids[1], Status: inbox.StatusProcessed, Destinations: []string{"app"}},
			{ID: ids[2], Status: inbox.StatusRetry, NextAttemptAt: b.clock.Now().Add(time.Minute), Error: "busy"},
			{ID: ids[3], Status: inbox.StatusDead, Error: "invalid"},
		}, nil
	})
	if err != nil {
		b.t.Fatalf("ApplyFinish: %v", err)
	}
	want := []inbox.Applied{
		{Outcome: inbox.ApplyApplied, To: "open", Transition: true},
		{Outcome: inbox.ApplyApplied, From: "open", To: "paid", Transition: true},
		{Outcome: inbox.ApplyApplied, To: "open", Transition: true},
	}
	if !slices.Equal(seen, want) {
		b.t.Errorf("decide saw %+v, want %+v", seen, want)
	}
	for i, st := range []inbox.Status{inbox.StatusProcessed, inbox.StatusDelivering, inbox.StatusRetry, inbox.StatusDead} {
		b.status(ids[i], st)
	}
	for i, w := range want {
		if got := b.get(ids[i]).Applied; got == nil || *got != w {
			b.t.Errorf("recorded result of event %d: %+v, want %+v", ids[i], got, w)
		}
	}
	if d := b.deliveries(ids[1])[ids[1]]["app"]; d.Status != inbox.DeliveryPending {
		b.t.Errorf("delivery of the event for app: %+v, want pending", d)
	}
	b.entityAt("ch_1", "paid", 20, ids[1])
}

// testApplyFinishLost finishes, as the owner of an expired lease, a batch
// of which another worker took one event over: that event's result is
// not recorded and is named lost, but its Apply result is, so that the
// worker now holding it reads the same result.
func testApplyFinishLost(b *bundle) {
	af := capability[inbox.ApplyFinisher](b)
	ids := b.add(item("a", entity("ch_1", 10, "open")), item("b", entity("ch_2", 10, "open")))
	evs := b.lease("w1", 2)
	b.clock.Advance(lease)
	if got := b.leaseIDs("w2", 1); !slices.Equal(got, ids[:1]) {
		b.t.Fatalf("w2 leased %v, want %v", got, ids[:1])
	}
	err := af.ApplyFinish(b.ctx, "w1", evs, func(applied []inbox.Applied) ([]inbox.Result, error) {
		return []inbox.Result{{ID: ids[0], Status: inbox.StatusProcessed}, {ID: ids[1], Status: inbox.StatusProcessed}}, nil
	})
	var lost *inbox.LostError
	if !errors.As(err, &lost) || !slices.Equal(lost.IDs, ids[:1]) {
		b.t.Fatalf("ApplyFinish by w1: %v, want a LostError naming %d", err, ids[0])
	}
	b.status(ids[0], inbox.StatusReceived)
	b.status(ids[1], inbox.StatusProcessed)
	first := inbox.Applied{Outcome: inbox.ApplyApplied, To: "open", Transition: true}
	for _, id := range ids {
		if got := b.get(id).Applied; got == nil || *got != first {
			b.t.Errorf("recorded result of event %d: %+v, want %+v", id, got, first)
		}
	}
	b.finish("w2", inbox.Result{ID: ids[0], Status: inbox.StatusProcessed})
}

// testApplyFinishFails: when decide fails, nothing of the batch is
// recorded, the error is the caller's (not the store being unavailable),
// and the events stay leased.
func testApplyFinishFails(b *bundle) {
	af := capability[inbox.ApplyFinisher](b)
	ids := b.add(item("a", entity("ch_1", 10, "open")))
	evs := b.lease("w", 1)
	boom := errors.New("boom")
	err := af.ApplyFinish(b.ctx, "w", evs, func([]inbox.Applied) ([]inbox.Result, error) { return nil, boom })
	if !errors.Is(err, boom) || errors.Is(err, dedupe.ErrUnavailable) {
		b.t.Fatalf("ApplyFinish with a failing decide: %v, want its error, not the store's", err)
	}
	if got := b.get(ids[0]).Applied; got != nil {
		b.t.Errorf("a failed ApplyFinish recorded %+v", got)
	}
	if _, err := b.store.Entity(b.ctx, "acme", "charge", "ch_1"); !errors.Is(err, inbox.ErrNotFound) {
		b.t.Errorf("a failed ApplyFinish wrote the entity: %v", err)
	}
	b.finish("w", inbox.Result{ID: ids[0], Status: inbox.StatusProcessed})
}
