package inboxtest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// dispatchRated records done and leases up to n deliveries of lane for
// owner under l.
func (b *bundle) dispatchRated(owner string, n int, l inbox.RateLimit, done ...inbox.Done) inbox.Dispatched {
	b.t.Helper()
	out, err := capability[inbox.RatedDispatcher](b).DispatchRated(b.ctx, owner, app, done, n, lease, l)
	if err != nil {
		b.t.Fatalf("DispatchRated: %v", err)
	}
	return out
}

// toDeliverMany adds count events and finishes them processed for
// destination app, each with a key of its own.
func (b *bundle) toDeliverMany(prefix string, count int) []int64 {
	b.t.Helper()
	items, keys := make([]inbox.Item, count), make([]string, count)
	for i := range count {
		items[i] = item(fmt.Sprintf("%s%d", prefix, i), entity(fmt.Sprintf("%s%d", prefix, i), 1, "s"))
		keys[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	ids := b.add(items...)
	b.toDeliverOrdered(ids, keys)
	return ids
}

// delays are how long after now the tasks' slots are, in order.
func delays(now time.Time, tasks []inbox.Task) []time.Duration {
	out := make([]time.Duration, len(tasks))
	for i, t := range tasks {
		out[i] = t.Slot.Sub(now)
	}
	return out
}

// testRated: a rated lane leases its deliveries into slots one 1/rate
// apart, no further ahead than inbox.RateAhead, each task saying how
// long to wait for its slot, and says when the next slot comes within
// reach; slots a dispatch could not use stay free; a hold (a
// destination's Retry-After) gives none before it ends, to any owner; an
// ordered lane leases its heads under the rate; Reslot gives deliveries
// leased earlier the next free slots.
func testRated(b *bundle) {
	capability[inbox.RatedDispatcher](b)
	b.toDeliverMany("e", 30)
	r := inbox.RateLimit{Rate: inbox.Rate{Events: 40, Per: time.Second}} // a slot each 25ms
	ms := func(v ...int) string {
		return fmt.Sprint(slices.Collect(func(yield func(time.Duration) bool) {
			for _, x := range v {
				yield(time.Duration(x) * time.Millisecond)
			}
		}))
	}
	out := b.dispatchRated("n1", 16, r)
	if got := fmt.Sprint(delays(b.clock.Now(), out.Tasks)); got != ms(0, 25, 50, 75, 100) || out.Wait != 25*time.Millisecond {
		b.t.Fatalf("an idle lane: delays %s, wait %v; want %s, then 25ms", got, out.Wait, ms(0, 25, 50, 75, 100))
	}
	if got := b.dispatchRated("n2", 16, r); len(got.Tasks) != 0 {
		b.t.Fatalf("another owner leased %d while every slot in reach is taken", len(got.Tasks))
	}
	b.clock.Advance(50 * time.Millisecond)
	done := make([]inbox.Done, len(out.Tasks))
	for i, t := range out.Tasks {
		done[i] = b.ended(t.Delivery.EventID, "app", inbox.DeliveryDelivered, 200, "")
	}
	if got := b.dispatchRated("n1", 16, r, done...); fmt.Sprint(delays(b.clock.Now(), got.Tasks)) != ms(75, 100) {
		b.t.Fatalf("50ms later: delays %v, want %s", delays(b.clock.Now(), got.Tasks), ms(75, 100))
	}
	// Plenty of time: 2 asked, and the next owner's slots follow them.
	b.clock.Advance(time.Second)
	if got := b.dispatchRated("n1", 2, r); fmt.Sprint(delays(b.clock.Now(), got.Tasks)) != ms(0, 25) || got.Wait != 0 {
		b.t.Fatalf("2 asked of an idle lane: delays %v, wait %v", delays(b.clock.Now(), got.Tasks), got.Wait)
	}
	if got := b.dispatchRated("n2", 16, r); fmt.Sprint(delays(b.clock.Now(), got.Tasks)) != ms(50, 75, 100) {
		b.t.Fatalf("the next owner: delays %v, want %s", delays(b.clock.Now(), got.Tasks), ms(50, 75, 100))
	}
	// A 429's Retry-After holds the lane for every owner.
	b.clock.Advance(time.Second)
	hold := r
	hold.Hold = b.clock.Now().Add(2 * time.Second)
	b.dispatchRated("n1", 0, hold)
	if got := b.dispatchRated("n2", 16, r); len(got.Tasks) != 0 || got.Wait != 1900*time.Millisecond {
		b.t.Fatalf("a held lane leased %d, wait %v; want none for 1.9s", len(got.Tasks), got.Wait)
	}
	b.clock.Advance(2 * time.Second)
	ordered := r
	ordered.Ordered = true
	if got := b.dispatchRated("n2", 16, ordered); len(got.Tasks) != 5 {
		b.t.Fatalf("after the hold, ordered: leased %d, want 5", len(got.Tasks))
	}
	// Deliveries whose slots passed while their node was held up take
	// the next free ones.
	slots, err := capability[inbox.RatedDispatcher](b).Reslot(b.ctx, app, r, 2)
	if err != nil || len(slots) != 2 || fmt.Sprint([]time.Duration{slots[0].Sub(b.clock.Now()), slots[1].Sub(b.clock.Now())}) != ms(125, 150) {
		b.t.Fatalf("Reslot: %v, %v; want %s from now", slots, err, ms(125, 150))
	}
	if got := b.dispatchRated("n1", 16, r); len(got.Tasks) != 0 || got.Wait != 75*time.Millisecond {
		b.t.Fatalf("after Reslot: leased %d, wait %v; want none for 75ms", len(got.Tasks), got.Wait)
	}
}

// testNodesRatedRace: dispatchers on both stores, several each, lease a
// rated lane at once until every delivery is leased: each slot goes to
// one delivery, and the slots follow each other one interval apart.
func testNodesRatedRace(n *nodes) {
	b := n.bundles[0]
	capability[inbox.RatedDispatcher](b)
	const deliveries = 200
	b.toDeliverMany("e", deliveries)
	// 800 slots within reach: every dispatch takes slots.
	r := inbox.RateLimit{Rate: inbox.Rate{Events: 8000, Per: time.Second}}
	const workers = 6
	var (
		mu     sync.Mutex
		leased []time.Duration
		ready  sync.WaitGroup
		start  = make(chan struct{})
	)
	ready.Add(workers * len(n.stores))
	go func() {
		ready.Wait()
		close(start)
	}()
	n.each(workers, func(store inbox.Store, node, worker int) {
		rd := store.(inbox.RatedDispatcher)
		owner := fmt.Sprintf("node%d-%d", node, worker)
		ready.Done()
		<-start
		for {
			out, err := rd.DispatchRated(n.t.Context(), owner, app, nil, 3, lease, r)
			if errors.Is(err, dedupe.ErrUnavailable) {
				continue
			}
			if err != nil {
				n.t.Errorf("%s: DispatchRated: %v", owner, err)
				return
			}
			if len(out.Tasks) == 0 {
				return
			}
			mu.Lock()
			leased = append(leased, delays(b.clock.Now(), out.Tasks)...)
			mu.Unlock()
		}
	})
	slices.Sort(leased)
	var want []time.Duration
	for i := range deliveries {
		want = append(want, time.Duration(i)*time.Second/8000)
	}
	if !slices.Equal(leased, want) {
		n.t.Fatalf("the dispatchers leased slots %v together; want %v, each once", leased, want)
	}
}
