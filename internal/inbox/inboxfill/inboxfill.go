// Package inboxfill puts stored events into processing states through the
// inbox's own API (Lease, Apply, Finish, Dispatch), for the tests of the
// packages that show them (the admin API, the CLI, the event view).
package inboxfill

import (
	"slices"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// owner leases and records for every helper here.
const owner = "inboxfill"

// Route leases every due event, applies event id and finishes it processed
// for dests, so that it is delivering with a pending delivery to each (or
// processed, without dests). The other events' leases last a nanosecond,
// so they are due again as soon as the store's clock moves.
func Route(t testing.TB, s inbox.Store, id int64, dests ...string) {
	t.Helper()
	ctx := t.Context()
	evs, err := s.Lease(ctx, owner, 1000, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(evs, func(e inbox.Event) bool { return e.ID == id })
	if i < 0 {
		t.Fatalf("event %d is not due", id)
	}
	if _, err := s.Apply(ctx, evs[i:i+1]); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, owner, []inbox.Result{{ID: id, Status: inbox.StatusProcessed, Destinations: dests}}); err != nil {
		t.Fatal(err)
	}
}

// Attempt leases the due deliveries of lane and records attempt a (its
// EventID must be among them) ending in st; a pending one is due again at
// next. The other deliveries' leases last a nanosecond.
func Attempt(t testing.TB, s inbox.Store, lane inbox.Lane, a inbox.Attempt, st inbox.DeliveryStatus, next time.Time) {
	t.Helper()
	ctx := t.Context()
	got, err := s.Dispatch(ctx, owner, lane, nil, 1000, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(got.Tasks, func(task inbox.Task) bool { return task.Event.ID == a.EventID }) {
		t.Fatalf("the delivery of event %d to %s is not due", a.EventID, lane.Destination)
	}
	a.Destination = lane.Destination
	done := inbox.Done{Status: st, Attempt: a}
	if st == inbox.DeliveryPending {
		done.NextAttemptAt = next
	}
	if got, err = s.Dispatch(ctx, owner, lane, []inbox.Done{done}, 0, 0); err != nil || len(got.Lost) > 0 {
		t.Fatalf("record the attempt: %v, lost %v", err, got.Lost)
	}
}
