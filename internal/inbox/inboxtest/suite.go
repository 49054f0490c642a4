package inboxtest

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/inbox"
)

// Clock is the manual clock the suite hands each store; it is the dedupe
// suite's clock, so a backend can pass the same Now to its key store.
type Clock = dedupetest.Clock

const (
	// window is the dedupe window of the suite's events.
	window = time.Hour
	// lease is how long the cases lease events for.
	lease = time.Minute
)

// start is where every case's clock begins: a whole second, far from the
// zero time and from the real clock.
var start = time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)

// Exercise runs the conformance suite against the stores newStore opens.
// newStore returns a fresh, empty store that reads time from clock.Now and
// registers its cleanup with t.
func Exercise(t *testing.T, newStore func(t *testing.T, clock *Clock) inbox.Store) {
	t.Helper()
	cases := []struct {
		name string
		run  func(*bundle)
	}{
		{"AcceptNew", testAcceptNew},
		{"AcceptDuplicate", testAcceptDuplicate},
		{"AcceptDuplicateAcrossBatches", testAcceptDuplicateAcrossBatches},
		{"AcceptWindowExpiry", testAcceptWindowExpiry},
		{"AcceptReplayGuard", testAcceptReplayGuard},
		{"AcceptReplayGuardWindow", testAcceptReplayGuardWindow},
		{"GetUnknown", testGetUnknown},
		{"ListFilters", testListFilters},
		{"ListSearch", testListSearch},
		{"LeaseInIDOrder", testLeaseInIDOrder},
		{"LeaseConcurrent", testLeaseConcurrent},
		{"LeaseExpired", testLeaseExpired},
		{"FinishByNonOwner", testFinishByNonOwner},
		{"RetryDue", testRetryDue},
		{"LeaseRetryAndReceivedInIDOrder", testLeaseRetryAndReceivedInIDOrder},
		{"DeadStays", testDeadStays},
		{"ApplyVersionGuard", testApplyVersionGuard},
		{"ApplyFinish", testApplyFinish},
		{"ApplyFinishLost", testApplyFinishLost},
		{"ApplyFinishFails", testApplyFinishFails},
		{"ApplyBatchInIDOrder", testApplyBatchInIDOrder},
		{"ApplyTies", testApplyTies},
		{"ApplySeparateEntities", testApplySeparateEntities},
		{"EntityUnknown", testEntityUnknown},
		{"Deliveries", testDeliveries},
		{"FinishWithoutDestinations", testFinishWithoutDestinations},
		{"DispatchConcurrent", testDispatchConcurrent},
		{"DispatchLost", testDispatchLost},
		{"DispatchFailureStaysItsOwn", testDispatchFailureStaysItsOwn},
		{"DispatchTwice", testDispatchTwice},
		{"FinishLost", testFinishLost},
		{"ReplayedEventAlreadyDelivered", testReplayedEventAlreadyDelivered},
		{"LaneStats", testLaneStats},
		{"ReplayDeadOnly", testReplayDeadOnly},
		{"ReplayFilters", testReplayFilters},
		{"ReplayKeepsApplied", testReplayKeepsApplied},
		{"ReplayDeliveries", testReplayDeliveries},
		{"ReplayPages", testReplayPages},
		{"ReplaySkipsLeased", testReplaySkipsLeased},
		{"Sweep", testSweep},
		{"StatsEmpty", testStatsEmpty},
		{"Stats", testStats},
		{"IncidentObserve", testIncidentObserve},
		{"IncidentSee", testIncidentSee},
		{"IncidentResolve", testIncidentResolve},
		{"IncidentRemind", testIncidentRemind},
		{"IncidentList", testIncidentList},
		{"NoticeLease", testNoticeLease},
		{"NoticeFinish", testNoticeFinish},
		{"Activity", testActivity},
		{"HoldLane", testHoldLane},
		{"RecentAttempts", testRecentAttempts},
		{"ReplayFailedTo", testReplayFailedTo},
		{"OrderedHeads", testOrderedHeads},
		{"OrderedBlock", testOrderedBlock},
		{"Rated", testRated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock := dedupetest.NewClock(start)
			c.run(&bundle{t: t, ctx: t.Context(), store: newStore(t, clock), clock: clock})
		})
	}
}

// bundle is what every case works with.
type bundle struct {
	t     *testing.T
	ctx   context.Context
	store inbox.Store
	clock *Clock
}

// option changes a test event.
type option func(*inbox.Event)

// from sets the event's source.
func from(source string) option { return func(e *inbox.Event) { e.Source = source } }

// of sets the event's tenant.
func of(tenant string) option { return func(e *inbox.Event) { e.Tenant = tenant } }

// entity sets the entity the event is about: a charge with the given id,
// order (also its version) and state.
func entity(id string, order int64, state string) option {
	return func(e *inbox.Event) {
		e.EntityType, e.EntityID, e.EntityOrder, e.EntityState = "charge", id, order, state
		e.EntityVersion = time.Unix(order, 0).UTC().Format(time.RFC3339)
	}
}

// item returns the test event named key, with the suite's window. Its hash
// covers its source, tenant and key.
func item(key string, opts ...option) inbox.Item {
	e := inbox.Event{
		Source:   "shop",
		Provider: "standard",
		Tenant:   "acme",
		EventID:  key,
		Type:     "charge.updated",
		Payload:  []byte(`{"id":"` + key + `"}`),
		Headers:  map[string]string{"Content-Type": "application/json"},
	}
	for _, o := range opts {
		o(&e)
	}
	k := dedupe.Key{Tenant: e.Tenant, Provider: e.Source, ObjectType: "event", Action: "any", EventID: key}
	e.Hash, e.Scope = k.Hash(), k.Scope()
	return inbox.Item{Event: e, Window: window}
}

// accept offers items in one batch and returns the outcomes.
func (b *bundle) accept(items ...inbox.Item) []inbox.Outcome {
	b.t.Helper()
	out, err := b.store.Accept(b.ctx, items)
	if err != nil {
		b.t.Fatalf("Accept: %v", err)
	}
	if len(out) != len(items) {
		b.t.Fatalf("Accept of %d items returned %d outcomes", len(items), len(out))
	}
	return out
}

// add accepts new events in one batch and returns their ids.
func (b *bundle) add(items ...inbox.Item) []int64 {
	b.t.Helper()
	ids := make([]int64, len(items))
	for i, o := range b.accept(items...) {
		if o.Status != dedupe.New {
			b.t.Fatalf("Accept of %s: %s, want new", items[i].Event.EventID, o.Status)
		}
		ids[i] = o.ID
	}
	return ids
}

// lease leases up to n events for owner for the suite's lease.
func (b *bundle) lease(owner string, n int) []inbox.Event {
	b.t.Helper()
	return b.leaseFor(owner, n, lease)
}

// leaseFor leases up to n events for owner for d.
func (b *bundle) leaseFor(owner string, n int, d time.Duration) []inbox.Event {
	b.t.Helper()
	evs, err := b.store.Lease(b.ctx, owner, n, d)
	if err != nil {
		b.t.Fatalf("Lease: %v", err)
	}
	if len(evs) > n {
		b.t.Fatalf("Lease of %d returned %d events", n, len(evs))
	}
	return evs
}

// leaseIDs leases up to n events for owner and returns their ids.
func (b *bundle) leaseIDs(owner string, n int) []int64 {
	b.t.Helper()
	return idsOf(b.lease(owner, n))
}

// finish finishes results as owner.
func (b *bundle) finish(owner string, results ...inbox.Result) {
	b.t.Helper()
	if err := b.store.Finish(b.ctx, owner, results); err != nil {
		b.t.Fatalf("Finish: %v", err)
	}
}

// processAll leases every due event and finishes it processed.
func (b *bundle) processAll() {
	b.t.Helper()
	for _, id := range b.leaseIDs("sweeper", 1000) {
		b.finish("sweeper", inbox.Result{ID: id, Status: inbox.StatusProcessed})
	}
}

// get returns one event.
func (b *bundle) get(id int64) inbox.Event {
	b.t.Helper()
	e, err := b.store.Get(b.ctx, id)
	if err != nil {
		b.t.Fatalf("Get(%d): %v", id, err)
	}
	return e
}

// status checks that event id stands at want.
func (b *bundle) status(id int64, want inbox.Status) {
	b.t.Helper()
	if got := b.get(id).Status; got != want {
		b.t.Errorf("event %d: status %s, want %s", id, got, want)
	}
}

// apply applies events and returns the results.
func (b *bundle) apply(events ...inbox.Event) []inbox.Applied {
	b.t.Helper()
	res, err := b.store.Apply(b.ctx, events)
	if err != nil {
		b.t.Fatalf("Apply: %v", err)
	}
	if len(res) != len(events) {
		b.t.Fatalf("Apply of %d events returned %d results", len(events), len(res))
	}
	return res
}

// entityOf returns the stored charge with the given id of tenant acme.
func (b *bundle) entityOf(id string) inbox.Entity {
	b.t.Helper()
	e, err := b.store.Entity(b.ctx, "acme", "charge", id)
	if err != nil {
		b.t.Fatalf("Entity(%s): %v", id, err)
	}
	return e
}

// replay replays f and returns the count.
func (b *bundle) replay(f inbox.ReplayFilter) int {
	b.t.Helper()
	n, err := b.store.Replay(b.ctx, f, nil)
	if err != nil {
		b.t.Fatalf("Replay(%+v): %v", f, err)
	}
	return n
}

// received returns the ids of the events that stand at received, sorted.
func (b *bundle) received() []int64 {
	b.t.Helper()
	evs, err := b.store.List(b.ctx, inbox.Filter{Status: inbox.StatusReceived, Limit: 1000})
	if err != nil {
		b.t.Fatalf("List: %v", err)
	}
	ids := idsOf(evs)
	slices.Sort(ids)
	return ids
}

// deliveries returns the deliveries of ids.
func (b *bundle) deliveries(ids ...int64) map[int64]map[string]inbox.Delivery {
	b.t.Helper()
	got, err := b.store.Deliveries(b.ctx, ids)
	if err != nil {
		b.t.Fatalf("Deliveries: %v", err)
	}
	return got
}

// stats returns the store's stats.
func (b *bundle) stats() inbox.Stats {
	b.t.Helper()
	st, err := b.store.Stats(b.ctx)
	if err != nil {
		b.t.Fatalf("Stats: %v", err)
	}
	return st
}

// idsOf returns the events' ids in their order.
func idsOf(evs []inbox.Event) []int64 {
	ids := make([]int64, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	return ids
}

// sorted returns a sorted copy of ids.
func sorted(ids ...int64) []int64 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}

// notFound checks that err is inbox.ErrNotFound.
func notFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, inbox.ErrNotFound) {
		t.Errorf("%s: %v, want inbox.ErrNotFound", what, err)
	}
}

// sameKeys reports whether m has exactly the keys want.
func sameKeys[V any](m map[int64]V, want ...int64) bool {
	return slices.Equal(slices.Sorted(maps.Keys(m)), sorted(want...))
}

// capability returns the store as a T, one of the inbox's optional
// capabilities, or skips the case when the store is not one.
func capability[T any](b *bundle) T {
	b.t.Helper()
	c, ok := b.store.(T)
	if !ok {
		b.t.Skipf("%T is not an %v", b.store, reflect.TypeFor[T]())
	}
	return c
}
