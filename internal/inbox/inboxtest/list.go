package inboxtest

import (
	"slices"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// listed checks that List(f) returns want, in that order.
func (b *bundle) listed(what string, f inbox.Filter, want ...int64) {
	b.t.Helper()
	evs, err := b.store.List(b.ctx, f)
	if err != nil {
		b.t.Fatalf("%s: List(%+v): %v", what, f, err)
	}
	if got := idsOf(evs); !slices.Equal(got, want) {
		b.t.Errorf("%s: List(%+v) = %v, want %v", what, f, got, want)
	}
}

// testListSearch: List finds events by provider event id, key, time
// received and apply outcome, alone and with the other filters, and pages
// forwards from a cursor; a time range comes by time received.
func testListSearch(b *bundle) {
	// Two events share the provider event id "evt": one per source.
	early := b.add(item("evt"), item("a", entity("ch_1", 10, "open")))
	b.clock.Advance(time.Minute)
	middle := b.add(item("evt", from("other")), item("b", entity("ch_1", 5, "void")))
	b.clock.Advance(time.Minute)
	late := b.add(item("c", entity("ch_2", 1, "open")), item("d"))
	evt, a, evtOther, stale, c, d := early[0], early[1], middle[0], middle[1], late[0], late[1]

	b.listed("provider event id", inbox.Filter{EventID: "evt"}, evtOther, evt)
	b.listed("provider event id and source", inbox.Filter{EventID: "evt", Source: "other"}, evtOther)
	b.listed("unknown provider event id", inbox.Filter{EventID: "nope"})
	b.listed("key", inbox.Filter{Hash: item("evt", from("other")).Event.Hash}, evtOther)
	b.listed("unknown key", inbox.Filter{Hash: item("nope").Event.Hash})

	b.listed("since, inclusive", inbox.Filter{Since: start.Add(time.Minute)}, d, c, stale, evtOther)
	b.listed("until, exclusive", inbox.Filter{Until: start.Add(time.Minute)}, a, evt)
	b.listed("since and until", inbox.Filter{Since: start.Add(time.Second), Until: start.Add(2 * time.Minute)}, stale, evtOther)
	b.listed("until and source", inbox.Filter{Until: start.Add(2 * time.Minute), Source: "other"}, evtOther)

	b.apply(b.eventsOf(a, stale, c, d)...)
	b.listed("applied", inbox.Filter{Outcome: inbox.ApplyApplied}, c, a)
	b.listed("stale", inbox.Filter{Outcome: inbox.ApplyStale}, stale)
	b.listed("no entity", inbox.Filter{Outcome: inbox.ApplyNone}, d)
	b.listed("not applied yet", inbox.Filter{Outcome: inbox.ApplyPending}, evtOther, evt)
	b.listed("applied since", inbox.Filter{Outcome: inbox.ApplyApplied, Since: start.Add(time.Minute)}, c)

	b.listed("after a cursor", inbox.Filter{AfterID: a}, d, c, stale, evtOther)
	b.listed("the oldest after a cursor", inbox.Filter{AfterID: a, Limit: 2}, stale, evtOther)
	b.listed("after the newest", inbox.Filter{AfterID: d})
	b.listed("between cursors", inbox.Filter{AfterID: evt, BeforeID: c}, stale, evtOther, a)
	b.listed("after a cursor, by source", inbox.Filter{AfterID: evt, Source: "other", Limit: 1}, evtOther)

	// A clock set back: an event with a larger id received earlier. A
	// time range lists by time received.
	b.clock.Advance(-90 * time.Second)
	back := b.add(item("back"))[0]
	b.listed("since, by time received", inbox.Filter{Since: start.Add(time.Second)}, d, c, stale, evtOther, back)
	b.listed("until, by time received", inbox.Filter{Until: start.Add(time.Minute + time.Second)}, stale, evtOther, back, a, evt)
	b.listed("no time, by id", inbox.Filter{Source: "shop", Limit: 2}, back, d)
}
