package inboxtest

import (
	"fmt"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// digest returns the test digest named name.
func digest(name string) dedupe.Hash {
	return dedupe.Key{Provider: "replay guard", EventID: name}.Hash()
}

// request marks items as one request's events with digest d.
func request(d dedupe.Hash, items ...inbox.Item) []inbox.Item {
	for i := range items {
		items[i].Digest = d
	}
	return items
}

// testAcceptReplayGuard: a request whose digest is kept is a replay, its
// events duplicates whatever their keys; a request's own events are all
// new; a known key is a duplicate under a new digest; and a digest is
// forgotten after its window and swept.
func testAcceptReplayGuard(b *bundle) {
	d := digest("signed content")
	ids := b.add(request(d, item("a"), item("b"))...)
	b.clock.Advance(time.Second)

	// The same signed content under other keys (another path tenant).
	out := b.accept(request(d, item("a", of("victim")), item("b", of("victim")), item("c", of("victim")))...)
	for i, o := range out {
		if o.Status != dedupe.Duplicate || o.ID != 0 || !o.FirstSeen.Equal(start) {
			b.t.Errorf("replayed item %d: %+v, want duplicate first seen %v", i, o, start)
		}
	}
	if got := b.received(); len(got) != 2 || got[0] != ids[0] || got[1] != ids[1] {
		b.t.Errorf("stored events %v after the replay, want only %v", got, ids)
	}

	// Another signed content: keyed as usual. In one batch with a replay
	// and an unguarded item.
	out = b.accept(append(request(digest("retry"), item("a"), item("d")),
		append(request(d, item("e")), item("f"))...)...)
	if out[0].Status != dedupe.Duplicate || out[1].Status != dedupe.New ||
		out[2].Status != dedupe.Duplicate || out[3].Status != dedupe.New {
		b.t.Errorf("mixed batch: %s %s %s %s; want duplicate (known key), new, duplicate (replay), new (unguarded)",
			out[0].Status, out[1].Status, out[2].Status, out[3].Status)
	}
	if st := b.stats().Sources["shop"]; st.Accepted != 4 || st.Duplicates != 5 {
		b.t.Errorf("counters: %d accepted, %d duplicates; want 4 and 5 (replays count as duplicates)", st.Accepted, st.Duplicates)
	}

	b.clock.Advance(window)
	if out := b.accept(request(d, item("g"))...); out[0].Status != dedupe.New {
		b.t.Errorf("after the window: %s, want new (the digest expired)", out[0].Status)
	}
	b.clock.Advance(window)
	res, err := b.store.Sweep(b.ctx, start)
	if err != nil {
		b.t.Fatal(err)
	}
	if res.Digests != 2 {
		b.t.Errorf("Sweep removed %d digests, want the 2 expired", res.Digests)
	}
	if res, err := b.store.Sweep(b.ctx, start); err != nil || res.Digests != 0 {
		b.t.Errorf("second Sweep: %+v, %v; want no digest left", res, err)
	}
}

// testAcceptReplayGuardWindow: a digest is kept for its request's whole
// window, not some shorter horizon: a replay just inside the window, long
// after the first sighting, is a duplicate as of that sighting and does
// not extend the digest, which expires at first seen + window.
func testAcceptReplayGuardWindow(b *bundle) {
	d := digest("signed content")
	b.add(request(d, item("a"))...)
	for i, at := range []time.Duration{time.Minute + time.Second, window / 2, window - time.Second} {
		b.clock.Advance(start.Add(at).Sub(b.clock.Now()))
		out := b.accept(request(d, item(fmt.Sprint("replay", i)))...)
		if o := out[0]; o.Status != dedupe.Duplicate || !o.FirstSeen.Equal(start) || !o.Expires.Equal(start.Add(window)) {
			b.t.Errorf("replay %v after the first: %+v, want duplicate first seen %v, expiring %v",
				at, o, start, start.Add(window))
		}
	}
	b.clock.Advance(start.Add(window).Sub(b.clock.Now()))
	if out := b.accept(request(d, item("late"))...); out[0].Status != dedupe.New {
		b.t.Errorf("at first seen + window: %s, want new (the digest expired then)", out[0].Status)
	}
}
