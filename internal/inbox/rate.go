package inbox

import (
	"context"
	"time"
)

// Rate limits a lane's deliveries for every node together: at most
// Events per Per. The lane's deliveries get slots one 1/rate apart, so
// they are made evenly spaced, without bursts.
type Rate struct {
	Events int
	Per    time.Duration
}

// RateAhead is how far ahead of its slot a delivery is leased: the node
// that leases it waits out the rest, so that a dispatch that comes late
// by less than this loses no slot.
const RateAhead = 100 * time.Millisecond

// Schedule is the stored state of a rated lane.
type Schedule struct {
	// Next is the next free slot; a slot in the past is lost, not saved
	// up, so an idle lane does not burst when work comes.
	Next time.Time
	// Hold is when the destination takes deliveries again after it
	// answered 429 with a Retry-After: no slot is before it.
	Hold time.Time
}

// interval is the time between two slots.
func (r Rate) interval() time.Duration {
	return r.Per / time.Duration(r.Events)
}

// first is the schedule's first free slot at now under hold: not in
// the past, not before a Retry-After.
func (s Schedule) first(now, hold time.Time) time.Time {
	slot := now
	for _, t := range []time.Time{s.Next, s.Hold, hold} {
		if t.After(slot) {
			slot = t
		}
	}
	return slot
}

// RateLimit is what a rated dispatch leases under.
type RateLimit struct {
	// Rate is the lane's rate.
	Rate Rate
	// Hold, when later than the schedule's, is the destination's latest
	// Retry-After (after a 429): no node makes a delivery before it.
	Hold time.Time
	// Ordered leases as [OrderedDispatcher.DispatchOrdered] does.
	Ordered bool
}

// Plan is how many of n deliveries to lease when the lane's schedule,
// read at now, is s: the slots within RateAhead of now. When that is
// fewer than n, wait is how long until another slot comes within reach.
// s may be read without a lock: the slots are given by Take, under one,
// once the deliveries are leased, and a delivery whose slot others took
// meanwhile gets a later one.
func (l RateLimit) Plan(s Schedule, now time.Time, n int) (k int, wait time.Duration) {
	slot, iv := s.first(now, l.Hold), l.Rate.interval()
	for k < n && slot.Sub(now) <= RateAhead {
		k++
		slot = slot.Add(iv)
	}
	if k < n {
		wait = max(slot.Sub(now)-RateAhead, time.Millisecond)
	}
	return k, wait
}

// Take gives k leased deliveries the next k slots of the lane's schedule
// s, read under a lock at now: it returns the slots, in order, and the
// schedule to store, l's hold included.
func (l RateLimit) Take(s Schedule, now time.Time, k int) ([]time.Time, Schedule) {
	slot, iv := s.first(now, l.Hold), l.Rate.interval()
	slots := make([]time.Time, k)
	for i := range slots {
		slots[i] = slot
		slot = slot.Add(iv)
	}
	if l.Hold.After(s.Hold) {
		s.Hold = l.Hold
	}
	if k > 0 {
		s.Next = slot
	}
	return slots, s
}

// Changes reports whether a dispatch that leased k deliveries under l
// changes the schedule s.
func (l RateLimit) Changes(s Schedule, k int) bool {
	return k > 0 || l.Hold.After(s.Hold)
}

// RatedDispatcher is implemented by backends that keep a lane's rate
// (rate: on a destination) for every node that shares the store.
type RatedDispatcher interface {
	// DispatchRated is Dispatch (DispatchOrdered when l.Ordered) leasing
	// no more deliveries than the lane's schedule has slots within
	// RateAhead: each delivery leased takes the next slot, in the
	// transaction that leases it, so that the nodes together make at
	// most the rate; its Task.Slot says when. Dispatched.Wait says when
	// the schedule has a slot again, when it had fewer than n.
	DispatchRated(ctx context.Context, owner string, lane Lane, done []Done, n int, d time.Duration, l RateLimit) (Dispatched, error)
	// Reslot gives k deliveries leased earlier the lane's next k slots,
	// in order, as Task.Slot gives them: their own slots passed while
	// their node was held up, and made late they would bunch with the
	// deliveries of the slots after them.
	Reslot(ctx context.Context, lane Lane, l RateLimit, k int) ([]time.Time, error)
}
