package worker_test

import (
	"context"
	"testing"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/worker"
)

// A destination an operator holds gets no attempt from any node while its
// deliveries are due, and every one of them once released; the hold is
// the store's, so a node started after it (a restart) keeps it too, and
// the source's other destination is not held back.
func TestHeldDestinationWaitsForRelease(t *testing.T) {
	t.Parallel()
	held, other := newDest(t, nil), newDest(t, nil)
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{
		destination("app", held, worker.OnEvent, 0), destination("audit", other, worker.OnEvent, 0)}})
	app := inbox.Lane{Source: "shop", Destination: "app"}
	if err := b.store.HoldLane(context.Background(), app, true); err != nil {
		t.Fatal(err)
	}
	b.start()
	ids := b.add(event("o1", 1, "paid"), event("o2", 1, "paid"))

	b.once()
	restarted, err := worker.New(b.opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.ProcessOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(held.Calls()); n != 0 {
		t.Fatalf("the held destination was called %d times", n)
	}
	if n := len(other.Calls()); n != 2 {
		t.Fatalf("the other destination was called %d times, want 2", n)
	}
	for _, id := range ids {
		b.wantStatus(id, inbox.StatusDelivering)
		if d := b.delivery(id, "app"); d.Status != inbox.DeliveryPending || d.Attempts != 0 {
			t.Errorf("held delivery of event %d: %+v, want pending with no attempt", id, d)
		}
	}
	if st := b.lane("shop", "app"); !st.Held || st.Pending != 2 {
		t.Errorf("lane %+v, want held with 2 pending", st)
	}

	if err := b.store.HoldLane(context.Background(), app, false); err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.ProcessOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(held.Calls()); n != 2 {
		t.Fatalf("the released destination was called %d times, want 2", n)
	}
	for _, id := range ids {
		b.wantStatus(id, inbox.StatusProcessed)
	}
}
