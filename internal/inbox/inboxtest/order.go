package inboxtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// dispatchOrdered records done and leases up to n heads of lane for owner.
func (b *bundle) dispatchOrdered(owner string, lane inbox.Lane, n int, done ...inbox.Done) []inbox.Task {
	b.t.Helper()
	out, err := capability[inbox.OrderedDispatcher](b).DispatchOrdered(b.ctx, owner, lane, done, n, lease)
	if err != nil {
		b.t.Fatalf("DispatchOrdered: %v", err)
	}
	return out.Tasks
}

// toDeliverOrdered finishes the received events ids processed for
// destination app, each with its key.
func (b *bundle) toDeliverOrdered(ids []int64, keys []string) {
	b.t.Helper()
	evs := b.lease("processor", 1000)
	if len(evs) != len(ids) {
		b.t.Fatalf("leased %d events, want %d", len(evs), len(ids))
	}
	results := make([]inbox.Result, len(ids))
	for i, id := range ids {
		results[i] = inbox.Result{ID: id, Status: inbox.StatusProcessed, Destinations: []string{"app"},
			OrderKeys: map[string]string{"app": keys[i]}}
	}
	b.finish("processor", results...)
}

// leased describes tasks as "key#sequence:id" for messages and checks.
func leased(tasks []inbox.Task) []string {
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = fmt.Sprintf("%s#%d:%d", t.Delivery.OrderKey, t.Delivery.Sequence, t.Delivery.EventID)
	}
	slices.Sort(out)
	return out
}

// testOrderedHeads: an ordered lane leases one delivery per key, the head:
// the lowest version, then inbox id, whatever the arrival order. A key
// with a delivery in flight or backing off leases nothing while the other
// keys go on; a retry keeps its position; a delivery that fails for good
// is skipped and the next one counts it; an expired lease frees the key
// for another owner, and the late record of the first is lost.
func testOrderedHeads(b *bundle) {
	capability[inbox.OrderedDispatcher](b)
	ids := b.add(item("a3", entity("a", 3, "s")), item("a1", entity("a", 1, "s")), item("a2", entity("a", 2, "s")),
		item("b5", entity("b", 5, "s")), item("b5bis", entity("b", 5, "s")))
	b.toDeliverOrdered(ids, []string{"A", "A", "A", "B", "B"})
	a3, a1, a2, b5, b5bis := ids[0], ids[1], ids[2], ids[3], ids[4]
	got := b.dispatchOrdered("n1", app, 10)
	want := []string{fmt.Sprintf("A#1:%d", a1), fmt.Sprintf("B#1:%d", b5)}
	if !slices.Equal(leased(got), want) {
		b.t.Fatalf("first heads %v, want %v (one per key, lowest version first)", leased(got), want)
	}
	if more := b.dispatchOrdered("n2", app, 10); len(more) != 0 {
		b.t.Fatalf("leased %v while each key has a delivery in flight", leased(more))
	}
	// A backs off; B goes on, its tie by inbox id.
	retry := b.ended(a1, "app", inbox.DeliveryPending, 503, "unavailable")
	retry.NextAttemptAt = b.clock.Now().Add(time.Minute)
	got = b.dispatchOrdered("n1", app, 10, retry, b.ended(b5, "app", inbox.DeliveryDelivered, 200, "ok"))
	if want := []string{fmt.Sprintf("B#2:%d", b5bis)}; !slices.Equal(leased(got), want) {
		b.t.Fatalf("after A's failure: %v, want %v (A waits for its head's retry)", leased(got), want)
	}
	b.clock.Advance(time.Minute)
	got = b.dispatchOrdered("n1", app, 10, b.ended(b5bis, "app", inbox.DeliveryDelivered, 200, "ok"))
	if want := []string{fmt.Sprintf("A#1:%d", a1)}; !slices.Equal(leased(got), want) {
		b.t.Fatalf("A's retry: %v, want %v (same position)", leased(got), want)
	}
	got = b.dispatchOrdered("n1", app, 10, b.ended(a1, "app", inbox.DeliveryFailed, 503, "out of attempts"))
	if want := []string{fmt.Sprintf("A#2:%d", a2)}; !slices.Equal(leased(got), want) || got[0].Delivery.Skipped != 1 {
		b.t.Fatalf("after A's head failed for good: %v (skipped %d), want %v with 1 skipped", leased(got), skippedOf(got), want)
	}
	b.status(a1, inbox.StatusDead)
	// n1 dies with A's second delivery in flight: once its lease passes,
	// n2 takes the same head, and n1's late record changes nothing.
	b.clock.Advance(lease + time.Second)
	got = b.dispatchOrdered("n2", app, 10)
	if want := []string{fmt.Sprintf("A#2:%d", a2)}; !slices.Equal(leased(got), want) || got[0].Delivery.Skipped != 1 {
		b.t.Fatalf("after n1's lease expired: %v, want %v again, still reporting the skip", leased(got), want)
	}
	out, err := capability[inbox.OrderedDispatcher](b).DispatchOrdered(b.ctx, "n1", app, []inbox.Done{b.ended(a2, "app", inbox.DeliveryDelivered, 200, "late")}, 10, lease)
	if err != nil {
		b.t.Fatal(err)
	}
	if !slices.Equal(out.Lost, []int64{a2}) || len(out.Tasks) != 0 {
		b.t.Fatalf("n1's late record: lost %v, leased %v; want a2 lost and nothing leased", out.Lost, leased(out.Tasks))
	}
	got = b.dispatchOrdered("n2", app, 10, b.ended(a2, "app", inbox.DeliveryDelivered, 200, "ok"))
	if want := []string{fmt.Sprintf("A#3:%d", a3)}; !slices.Equal(leased(got), want) || got[0].Delivery.Skipped != 0 {
		b.t.Fatalf("A's last: %v, want %v with no skip", leased(got), want)
	}
	if more := b.dispatchOrdered("n2", app, 10, b.ended(a3, "app", inbox.DeliveryDelivered, 200, "ok")); len(more) != 0 {
		b.t.Fatalf("leased %v after every delivery ended", leased(more))
	}
	for _, id := range []int64{a2, a3, b5, b5bis} {
		b.status(id, inbox.StatusProcessed)
	}
}

func skippedOf(tasks []inbox.Task) []int {
	out := make([]int, len(tasks))
	for i, t := range tasks {
		out[i] = t.Delivery.Skipped
	}
	return out
}

// testOrderedBlock: with Block, a delivery that failed for good holds its
// key: Stats counts the key as blocked and nothing more of it is leased,
// while other keys go on. A replay of the event makes it the key's head
// again, before the deliveries that waited; BlockedKeys lists the key
// with its event, and SkipKey passes over it.
func testOrderedBlock(b *bundle) {
	capability[inbox.OrderedDispatcher](b)
	skipper := capability[inbox.OrderSkipper](b)
	ids := b.add(item("k1", entity("k", 1, "s")), item("k2", entity("k", 2, "s")), item("k3", entity("k", 3, "s")),
		item("o1", entity("o", 1, "s")))
	b.toDeliverOrdered(ids, []string{"K", "K", "K", "O"})
	k1, k2, k3, o1 := ids[0], ids[1], ids[2], ids[3]
	b.dispatchOrdered("n1", app, 10)
	block := b.ended(k1, "app", inbox.DeliveryFailed, 400, "refused")
	block.Block = true
	got := b.dispatchOrdered("n1", app, 10, block, b.ended(o1, "app", inbox.DeliveryDelivered, 200, "ok"))
	if len(got) != 0 {
		b.t.Fatalf("leased %v from a blocked key", leased(got))
	}
	b.status(k1, inbox.StatusDead)
	if st := laneOf(b.stats(), app); st.Blocked != 1 {
		b.t.Fatalf("stats: %d blocked keys, want 1", st.Blocked)
	}
	// The operator replays the dead event: it goes first.
	if n := b.replay(inbox.ReplayFilter{Dead: true}); n != 1 {
		b.t.Fatalf("replayed %d, want 1", n)
	}
	if got := b.dispatchOrdered("n1", app, 10); len(got) != 0 {
		b.t.Fatalf("leased %v before the replayed event was processed again", leased(got))
	}
	b.toDeliverOrdered([]int64{k1}, []string{"K"})
	if st := laneOf(b.stats(), app); st.Blocked != 0 {
		b.t.Fatalf("stats after replay: %d blocked keys, want 0", st.Blocked)
	}
	got = b.dispatchOrdered("n1", app, 10)
	if len(got) != 1 || got[0].Delivery.EventID != k1 || got[0].Delivery.Sequence != 1 {
		b.t.Fatalf("after replay: %v, want the replayed k1 at its position, 1", leased(got))
	}
	// It fails for good again; this time the operator skips it.
	got = b.dispatchOrdered("n1", app, 10, block)
	if len(got) != 0 {
		b.t.Fatalf("leased %v from a blocked key", leased(got))
	}
	if keys, err := skipper.BlockedKeys(b.ctx, app, 10); err != nil || len(keys) != 1 || keys[0] != (inbox.BlockedKey{Key: "K", EventID: k1}) {
		b.t.Fatalf("BlockedKeys: %v, %v; want K blocked by %d", keys, err, k1)
	}
	if ok, err := skipper.SkipKey(b.ctx, app, "K"); err != nil || !ok {
		b.t.Fatalf("SkipKey: %v, %v; want true", ok, err)
	}
	if ok, err := skipper.SkipKey(b.ctx, app, "K"); err != nil || ok {
		b.t.Fatalf("SkipKey of a key not blocked: %v, %v; want false", ok, err)
	}
	if keys, err := skipper.BlockedKeys(b.ctx, app, 10); err != nil || len(keys) != 0 {
		b.t.Fatalf("BlockedKeys after the skip: %v, %v; want none", keys, err)
	}
	got = b.dispatchOrdered("n1", app, 10)
	if len(got) != 1 || got[0].Delivery.EventID != k2 || got[0].Delivery.Sequence != 2 || got[0].Delivery.Skipped != 1 {
		b.t.Fatalf("after skip: %v (skipped %v), want k2 at position 2 with 1 skipped", leased(got), skippedOf(got))
	}
	got = b.dispatchOrdered("n1", app, 10, b.ended(k2, "app", inbox.DeliveryDelivered, 200, "ok"))
	if len(got) != 1 || got[0].Delivery.EventID != k3 {
		b.t.Fatalf("next: %v, want k3", leased(got))
	}
}

// laneOf returns the state of lane in st.
func laneOf(st inbox.Stats, lane inbox.Lane) inbox.LaneState {
	for _, l := range st.Lanes {
		if l.Lane == lane {
			return l
		}
	}
	return inbox.LaneState{}
}

// testNodesOrderedRace: dispatchers on both stores, several each, lease
// an ordered lane's deliveries at once and record each as delivered. No
// key ever has two deliveries in flight, and each key's deliveries are
// made in version order with positions 1, 2, 3...
func testNodesOrderedRace(n *nodes) {
	b := n.bundles[0]
	capability[inbox.OrderedDispatcher](b)
	const (
		keys    = 20
		perKey  = 15
		workers = 3
	)
	var items []inbox.Item
	var order []string
	for k := range keys {
		for v := range perKey {
			items = append(items, item(fmt.Sprintf("k%d-v%d", k, v), entity(fmt.Sprintf("e%d", k), int64(v+1), "s")))
			order = append(order, fmt.Sprintf("K%d", k))
		}
	}
	perm := rand.Perm(len(items))
	shuffled, keysOf := make([]inbox.Item, len(items)), make([]string, len(items))
	for i, p := range perm {
		shuffled[i], keysOf[i] = items[p], order[p]
	}
	ids := b.add(shuffled...)
	b.toDeliverOrdered(ids, keysOf)
	version := map[int64]int64{}
	for i, id := range ids {
		version[id] = shuffled[i].Event.EntityOrder
	}
	var (
		mu       sync.Mutex
		inFlight = map[string]bool{}
		made     = map[string][]int64{}
		seqs     = map[string][]int64{}
		total    int
	)
	n.each(workers, func(store inbox.Store, node, worker int) {
		od := store.(inbox.OrderedDispatcher)
		owner := fmt.Sprintf("node%d-%d", node, worker)
		var (
			done     []inbox.Done
			mine     []string
			refusals int
		)
		for {
			// A key stops being in flight when its record is handed in:
			// no one may lease it before then.
			mu.Lock()
			for _, k := range mine {
				inFlight[k] = false
			}
			mu.Unlock()
			out, err := od.DispatchOrdered(n.t.Context(), owner, app, done, 4, lease)
			// A store that answers unavailable (SQLite's lock held past
			// its busy timeout on a loaded machine) took nothing: the
			// dispatcher hands the same records in again, as the worker's
			// lanes do.
			if errors.Is(err, dedupe.ErrUnavailable) && refusals < 10 {
				refusals++
				n.t.Logf("%s: DispatchOrdered: %v; again", owner, err)
				continue
			}
			if err != nil {
				n.t.Errorf("%s: DispatchOrdered: %v", owner, err)
				return
			}
			refusals = 0
			done, mine = done[:0], mine[:0]
			mu.Lock()
			for _, t := range out.Tasks {
				k := t.Delivery.OrderKey
				if inFlight[k] {
					n.t.Errorf("%s leased %d of key %s while another of its deliveries is in flight", owner, t.Delivery.EventID, k)
				}
				inFlight[k] = true
				made[k] = append(made[k], version[t.Delivery.EventID])
				seqs[k] = append(seqs[k], t.Delivery.Sequence)
				mine = append(mine, k)
				done = append(done, inbox.Done{Status: inbox.DeliveryDelivered,
					Attempt: inbox.Attempt{EventID: t.Delivery.EventID, Destination: "app", At: n.clock.Now(), Code: 200}})
			}
			total += len(out.Tasks)
			finished := total >= len(ids)
			mu.Unlock()
			if (len(out.Tasks) == 0 && finished) || n.t.Failed() {
				return
			}
		}
	})
	for k := range keys {
		key := fmt.Sprintf("K%d", k)
		want, wantSeq := make([]int64, perKey), make([]int64, perKey)
		for v := range perKey {
			want[v], wantSeq[v] = int64(v+1), int64(v+1)
		}
		if !slices.Equal(made[key], want) || !slices.Equal(seqs[key], wantSeq) {
			n.t.Errorf("key %s made versions %v at positions %v, want %v at %v", key, made[key], seqs[key], want, wantSeq)
		}
	}
}
