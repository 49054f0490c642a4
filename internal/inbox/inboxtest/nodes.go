package inboxtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/inbox"
)

// ExerciseNodes runs the cases in which stores that share one database
// race each other, as the nodes of one deployment do. newDatabase makes a
// fresh, empty database whose stores read time from clock, registers its
// cleanup with t, and returns open, which opens another store on it each
// time it is called.
func ExerciseNodes(t *testing.T, newDatabase func(t *testing.T, clock *Clock) (open func() inbox.Store)) {
	t.Helper()
	cases := []struct {
		name string
		run  func(*nodes)
	}{
		{"AcceptRace", testNodesAcceptRace},
		{"ProcessRace", testNodesProcessRace},
		{"ApplyRace", testNodesApplyRace},
		{"IncidentRace", testNodesIncidentRace},
		{"IncidentRestart", testNodesIncidentRestart},
		{"OrderedRace", testNodesOrderedRace},
		{"RatedRace", testNodesRatedRace},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock := dedupetest.NewClock(start)
			open := newDatabase(t, clock)
			n := &nodes{t: t, clock: clock, open: open}
			for range 2 {
				s := open()
				n.stores = append(n.stores, s)
				n.bundles = append(n.bundles, &bundle{t: t, ctx: t.Context(), store: s, clock: clock})
			}
			c.run(n)
		})
	}
}

// nodes are two stores on one database; open opens another on it.
type nodes struct {
	t       *testing.T
	clock   *Clock
	open    func() inbox.Store
	stores  []inbox.Store
	bundles []*bundle
}

// each runs fn for every (store, worker) pair, workers goroutines per
// store, all at once, and waits for them.
func (n *nodes) each(workers int, fn func(store inbox.Store, node, worker int)) {
	var wg sync.WaitGroup
	for i, s := range n.stores {
		for w := range workers {
			wg.Go(func() { fn(s, i, w) })
		}
	}
	wg.Wait()
}

// testNodesAcceptRace: every worker of both stores offers every item, in a
// shuffled order, in batches, all at once; half the items carry a replay
// guard digest. Each event is accepted exactly once, by one of them, and
// stored once; the counters add up across the stores.
func testNodesAcceptRace(n *nodes) {
	const (
		events  = 200
		workers = 4
		batch   = 20
	)
	items := make([]inbox.Item, events)
	for i := range items {
		items[i] = item(fmt.Sprint("race-", i))
		if i%2 == 0 {
			// A guarded source's request: its digest races too.
			items[i].Digest = digest(items[i].Event.EventID)
		}
	}
	var (
		mu  sync.Mutex
		won = map[dedupe.Hash]int{}
		ids = map[int64]bool{}
	)
	n.each(workers, func(s inbox.Store, node, worker int) {
		order := slices.Clone(items)
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for lo := 0; lo < len(order); lo += batch {
			chunk := order[lo:min(lo+batch, len(order))]
			out, err := s.Accept(n.t.Context(), chunk)
			if err != nil {
				n.t.Errorf("node %d worker %d: Accept: %v", node, worker, err)
				return
			}
			mu.Lock()
			for i, o := range out {
				switch o.Status {
				case dedupe.New:
					won[chunk[i].Event.Hash]++
					ids[o.ID] = true
				case dedupe.Duplicate:
				default:
					n.t.Errorf("node %d: %s: %s, want new or duplicate", node, chunk[i].Event.EventID, o.Status)
				}
			}
			mu.Unlock()
		}
	})
	for _, it := range items {
		if won[it.Event.Hash] != 1 {
			n.t.Errorf("%s accepted %d times, want once", it.Event.EventID, won[it.Event.Hash])
		}
	}
	if len(ids) != events {
		n.t.Errorf("%d distinct ids for %d accepted events", len(ids), events)
	}
	for i, b := range n.bundles {
		if got := b.received(); len(got) != events {
			b.t.Errorf("store %d sees %d stored events, want %d", i, len(got), events)
		}
		st := b.stats().Sources["shop"]
		offered := int64(len(n.stores) * workers * events)
		if st.Accepted != events || st.Duplicates != offered-events || st.ByStatus[inbox.StatusReceived] != events {
			b.t.Errorf("store %d stats: %+v; want %d accepted, %d duplicates, %d received",
				i, st, events, offered-events, events)
		}
	}
}

// testNodesProcessRace: workers on both stores lease the same events at
// once, then dispatchers on both deliver them to two destinations at once,
// each store's on its own lane first and then both on both. Each event is
// leased by one worker, each delivery by one dispatcher, and every event
// ends processed: the last two deliveries of an event, ended at once on
// two stores, settle it.
func testNodesProcessRace(n *nodes) {
	const (
		events  = 100
		workers = 3
	)
	items := make([]inbox.Item, events)
	for i := range items {
		items[i] = item(fmt.Sprint("process-", i))
	}
	ids := n.bundles[0].add(items...)

	var (
		mu     sync.Mutex
		leased = map[int64]int{}
	)
	n.each(workers, func(s inbox.Store, node, worker int) {
		owner := fmt.Sprint("worker-", node, "-", worker)
		for {
			evs, err := s.Lease(n.t.Context(), owner, 7, lease)
			if err != nil {
				n.t.Errorf("%s: Lease: %v", owner, err)
				return
			}
			if len(evs) == 0 {
				return
			}
			results := make([]inbox.Result, len(evs))
			for i, e := range evs {
				results[i] = inbox.Result{ID: e.ID, Status: inbox.StatusProcessed, Destinations: []string{"app", "audit"}}
			}
			mu.Lock()
			for _, e := range evs {
				leased[e.ID]++
			}
			mu.Unlock()
			if err := s.Finish(n.t.Context(), owner, results); err != nil {
				n.t.Errorf("%s: Finish: %v", owner, err)
				return
			}
		}
	})
	for _, id := range ids {
		if leased[id] != 1 {
			n.t.Errorf("event %d leased %d times by workers of two stores, want once", id, leased[id])
		}
	}

	lanes := []inbox.Lane{app, {Source: "shop", Destination: "audit"}}
	delivered := map[inbox.Lane]map[int64]int{lanes[0]: {}, lanes[1]: {}}
	n.each(workers, func(s inbox.Store, node, worker int) {
		owner := fmt.Sprint("dispatcher-", node, "-", worker)
		// Store i starts on lane i, so the two lanes of one event end at
		// about the same time on different stores.
		for _, lane := range []inbox.Lane{lanes[node%2], lanes[(node+1)%2]} {
			var done []inbox.Done
			for {
				out, err := s.Dispatch(n.t.Context(), owner, lane, done, 5, lease)
				if err != nil {
					n.t.Errorf("%s: Dispatch: %v", owner, err)
					return
				}
				if len(out.Lost) > 0 {
					n.t.Errorf("%s lost %v under live leases", owner, out.Lost)
				}
				done = done[:0]
				if len(out.Tasks) == 0 {
					break
				}
				mu.Lock()
				for _, task := range out.Tasks {
					delivered[lane][task.Delivery.EventID]++
					done = append(done, inbox.Done{Status: inbox.DeliveryDelivered, Attempt: inbox.Attempt{
						EventID: task.Delivery.EventID, Destination: lane.Destination, At: n.clock.Now(), Code: 200}})
				}
				mu.Unlock()
			}
		}
	})
	b := n.bundles[1]
	for _, id := range ids {
		for _, lane := range lanes {
			if got := delivered[lane][id]; got != 1 {
				n.t.Errorf("event %d leased %d times on lane %s by dispatchers of two stores, want once", id, got, lane.Destination)
			}
		}
		b.status(id, inbox.StatusProcessed)
	}
	if st := b.stats(); st.Pending != 0 || st.Sources["shop"].ByStatus[inbox.StatusProcessed] != events {
		b.t.Errorf("stats after processing: pending %d, %+v; want none pending, %d processed", st.Pending, st.Sources["shop"], events)
	}
}

// testNodesApplyRace: workers on both stores apply the events of one
// entity at once, each event once, in no particular order; every event has
// a state of its own, and every two share a version (a tie). The version
// guard holds across the stores: the events that changed the state form
// one chain (each moved the entity on from a different state: two that
// started from the same state both read it before either wrote), and the
// entity ends at the newest version's later arrival.
func testNodesApplyRace(n *nodes) {
	const (
		events  = 100
		workers = 4
	)
	items := make([]inbox.Item, events)
	for i := range items {
		items[i] = item(fmt.Sprint("apply-", i), entity("ch_race", int64(i/2+1), fmt.Sprint("state-", i)))
	}
	ids := n.bundles[0].add(items...)
	evs := n.bundles[0].eventsOf(ids...)
	var (
		mu    sync.Mutex
		order = rand.Perm(events)
		from  = map[string][]int64{}
	)
	n.each(workers, func(s inbox.Store, node, worker int) {
		for {
			mu.Lock()
			if len(order) == 0 {
				mu.Unlock()
				return
			}
			e := evs[order[0]]
			order = order[1:]
			mu.Unlock()
			res, err := s.Apply(n.t.Context(), []inbox.Event{e})
			if err != nil {
				n.t.Errorf("node %d: Apply of %d: %v", node, e.ID, err)
				return
			}
			if res[0].Transition {
				mu.Lock()
				from[res[0].From] = append(from[res[0].From], e.ID)
				mu.Unlock()
			}
		}
	})
	for state, applied := range from {
		if len(applied) > 1 {
			n.t.Errorf("events %v all moved the entity on from state %q", applied, state)
		}
	}
	n.bundles[1].entityAt("ch_race", fmt.Sprint("state-", events-1), events/2, ids[events-1])
}
