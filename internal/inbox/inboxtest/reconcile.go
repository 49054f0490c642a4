package inboxtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/inbox"
)

// ExerciseReconciliations runs the cases of inbox.Reconciliations and of
// the Via an event records against the stores newStore opens, as
// [Exercise] does.
func ExerciseReconciliations(t *testing.T, newStore func(t *testing.T, clock *Clock) inbox.Store) {
	t.Helper()
	cases := []struct {
		name string
		run  func(*bundle)
	}{
		{"Via", testVia},
		{"CheckpointRoundTrip", testCheckpointRoundTrip},
		{"Have", testHave},
		{"OpenEntities", testOpenEntities},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock := dedupetest.NewClock(start)
			c.run(&bundle{t: t, ctx: t.Context(), store: newStore(t, clock), clock: clock})
		})
	}
}

// testVia: an event AcceptRecovered stores is recorded as recovered in
// Get, List and Lease; one whose webhook came first stays as it came, and
// the webhook of a recovered event is a duplicate.
func testVia(b *bundle) {
	r := capability[inbox.Reconciliations](b)
	ids := b.add(item("evt_webhook"))
	out, err := r.AcceptRecovered(b.ctx, []inbox.Item{item("evt_webhook"), item("evt_listed")})
	if err != nil {
		b.t.Fatal(err)
	}
	if out[0].Status != dedupe.Duplicate || out[1].Status != dedupe.New {
		b.t.Fatalf("AcceptRecovered of the webhook's event and a new one: %s, %s", out[0].Status, out[1].Status)
	}
	ids = append(ids, out[1].ID)
	for i, want := range []string{"", inbox.ViaReconcile} {
		e, err := b.store.Get(b.ctx, ids[i])
		if err != nil {
			b.t.Fatal(err)
		}
		if e.Via != want {
			b.t.Errorf("Get %d: via %q, want %q", ids[i], e.Via, want)
		}
	}
	evs, err := b.store.List(b.ctx, inbox.Filter{})
	if err != nil {
		b.t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range evs {
		got[e.EventID] = e.Via
	}
	if got["evt_webhook"] != "" || got["evt_listed"] != inbox.ViaReconcile {
		b.t.Errorf("List: via by event %v", got)
	}
	if out := b.accept(item("evt_listed")); out[0].Status != dedupe.Duplicate {
		b.t.Fatalf("the webhook copy of a recovered event: %s, want duplicate", out[0].Status)
	}
	for _, e := range b.lease("w", 10) {
		if e.EventID == "evt_listed" && e.Via != inbox.ViaReconcile {
			b.t.Errorf("Lease: via %q, want %q", e.Via, inbox.ViaReconcile)
		}
	}
}

// testCheckpointRoundTrip: a source has a zero checkpoint before its
// first save; each save replaces the source's checkpoint and leaves the
// others' alone; Checkpoints lists every source by name.
func testCheckpointRoundTrip(b *bundle) {
	r := capability[inbox.Reconciliations](b)
	cp, err := r.Checkpoint(b.ctx, "pay")
	if err != nil {
		b.t.Fatal(err)
	}
	if cp.Source != "pay" || !cp.Through.IsZero() || !cp.Run.Started.IsZero() || cp.Last.Listed != 0 {
		b.t.Fatalf("before the first run: %+v", cp)
	}
	at := func(m int) time.Time { return start.Add(time.Duration(m) * time.Minute) }
	running := inbox.Checkpoint{Source: "pay",
		Run: inbox.RunState{Started: at(10), Since: at(-60), After: "evt_3", Listed: 100, Had: 90, Recovered: 9, Failed: 1}}
	if err := r.SaveCheckpoint(b.ctx, running); err != nil {
		b.t.Fatal(err)
	}
	done := inbox.Checkpoint{Source: "pay", Through: at(10),
		Last: inbox.RunState{Started: at(10), Since: at(-60), Ended: at(11), Listed: 150, Had: 140, Recovered: 10}}
	other := inbox.Checkpoint{Source: "app", Through: at(5),
		Last: inbox.RunState{Started: at(5), Ended: at(6), Error: "refused by the provider's API"}}
	for _, c := range []struct {
		save inbox.Checkpoint
		want map[string]inbox.Checkpoint
	}{
		{running, map[string]inbox.Checkpoint{"pay": running}},
		{done, map[string]inbox.Checkpoint{"pay": done}},
		{other, map[string]inbox.Checkpoint{"pay": done, "app": other}},
	} {
		if err := r.SaveCheckpoint(b.ctx, c.save); err != nil {
			b.t.Fatal(err)
		}
		for source, want := range c.want {
			got, err := r.Checkpoint(b.ctx, source)
			if err != nil {
				b.t.Fatal(err)
			}
			checkCheckpoint(b.t, got, want)
		}
	}
	all, err := r.Checkpoints(b.ctx)
	if err != nil {
		b.t.Fatal(err)
	}
	if len(all) != 2 || all[0].Source != "app" || all[1].Source != "pay" {
		b.t.Fatalf("Checkpoints: %+v", all)
	}
	checkCheckpoint(b.t, all[1], done)
}

func checkCheckpoint(t *testing.T, got, want inbox.Checkpoint) {
	t.Helper()
	same := func(a, b inbox.RunState) bool {
		return a.Started.Equal(b.Started) && a.Since.Equal(b.Since) && a.Ended.Equal(b.Ended) && a.After == b.After &&
			a.Listed == b.Listed && a.Had == b.Had && a.Recovered == b.Recovered && a.Failed == b.Failed && a.Error == b.Error
	}
	if got.Source != want.Source || !got.Through.Equal(want.Through) || !same(got.Run, want.Run) || !same(got.Last, want.Last) {
		t.Errorf("checkpoint of %s:\n got %+v\nwant %+v", want.Source, got, want)
	}
}

// testHave: the keys Have finds are those Accept would call duplicates:
// of events accepted or recovered, within their window, however many are
// asked at once, in the order asked.
func testHave(b *bundle) {
	r := capability[inbox.Reconciliations](b)
	var items []inbox.Item
	for i := range 300 {
		items = append(items, item(fmt.Sprintf("evt_%03d", i)))
	}
	b.add(items[:150]...)
	if _, err := r.AcceptRecovered(b.ctx, items[150:200]); err != nil {
		b.t.Fatal(err)
	}
	hashes := make([]dedupe.Hash, len(items))
	for i, it := range items {
		hashes[len(items)-1-i] = it.Event.Hash
	}
	got, err := r.Have(b.ctx, hashes)
	if err != nil {
		b.t.Fatal(err)
	}
	for i, have := range got {
		if want := len(items)-1-i < 200; have != want {
			b.t.Errorf("Have %s: %v, want %v", items[len(items)-1-i].Event.EventID, have, want)
		}
	}
	b.clock.Advance(window)
	if got, err := r.Have(b.ctx, []dedupe.Hash{items[0].Event.Hash}); err != nil || got[0] {
		b.t.Errorf("Have of a key whose window has passed: %v, %v", got, err)
	}
	if out := b.accept(items[0]); out[0].Status != dedupe.New {
		b.t.Errorf("Accept of the key whose window passed: %s, want new", out[0].Status)
	}
}

// testOpenEntities: OpenEntities pages, in (tenant, type, id) order, the
// entities whose last event is of the source and whose state is not
// final, each with that event's payload; an entity that reached a final
// state, or was last written by another source, is not among them.
func testOpenEntities(b *bundle) {
	r := capability[inbox.Reconciliations](b)
	ids := b.add(
		item("ch_1-open", entity("ch_1", 10, "open")),
		item("ch_2-paid", entity("ch_2", 10, "paid")),
		item("ch_3-open", entity("ch_3", 10, "open")),
		item("ch_3-pending", entity("ch_3", 20, "pending")),
		item("ch_4-open", entity("ch_4", 10, "open")),
		item("ch_4-refunded", entity("ch_4", 20, "refunded")),
		item("ch_5-open", entity("ch_5", 10, "open"), from("other")),
		item("ch_6-open", entity("ch_6", 10, "open"), of("beta")),
		item("ch_7-open", entity("ch_7", 10, "open")),
	)
	b.apply(b.eventsOf(ids...)...)
	final := []string{"paid", "refunded"}
	var got []string
	after := inbox.EntityRef{}
	for pages := 0; ; pages++ {
		if pages > 4 {
			b.t.Fatalf("OpenEntities did not end: %v", got)
		}
		open, err := r.OpenEntities(b.ctx, "shop", final, after, 2)
		if err != nil {
			b.t.Fatal(err)
		}
		if len(open) > 2 {
			b.t.Fatalf("OpenEntities with limit 2 returned %d", len(open))
		}
		if len(open) == 0 {
			break
		}
		for _, o := range open {
			got = append(got, fmt.Sprintf("%s/%s/%s %s %s", o.Tenant, o.Type, o.ID, o.State, o.Payload))
		}
		after = open[len(open)-1].EntityRef
	}
	want := []string{
		`acme/charge/ch_1 open {"id":"ch_1-open"}`,
		`acme/charge/ch_3 pending {"id":"ch_3-pending"}`,
		`acme/charge/ch_7 open {"id":"ch_7-open"}`,
		`beta/charge/ch_6 open {"id":"ch_6-open"}`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		b.t.Errorf("OpenEntities of shop, paged by 2:\n got %q\nwant %q", got, want)
	}
}
