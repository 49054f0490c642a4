package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
)

// A worker's round: lease the due events, apply them to their entities,
// finish them for their destination; then the destination's lane leases
// the deliveries and records how they went.
func Example() {
	dir, err := os.MkdirTemp("", "inbox")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := sqlite.Open(filepath.Join(dir, "hookgate.db"), sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	var items []inbox.Item
	for i, state := range []string{"pending", "paid"} {
		k := dedupe.Key{Tenant: "acme", Provider: "stripe", ObjectType: "charge", Action: "updated", EventID: fmt.Sprint("evt_", i)}
		items = append(items, inbox.Item{Event: inbox.Event{
			Hash: k.Hash(), Scope: k.Scope(), Source: "stripe", Provider: "stripe", Tenant: "acme",
			EventID: k.EventID, EntityType: "charge", EntityID: "ch_1", EntityOrder: int64(i + 1),
			EntityState: state, Payload: []byte(`{}`),
		}, Window: 168 * time.Hour})
	}
	if _, err := s.Accept(ctx, items); err != nil {
		log.Fatal(err)
	}

	evs, err := s.Lease(ctx, "worker-1", 200, time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	applied, err := s.Apply(ctx, evs)
	if err != nil {
		log.Fatal(err)
	}
	var results []inbox.Result
	for i, e := range evs {
		a := applied[i]
		fmt.Printf("%s: %s %q -> %q, transition %v\n", e.EventID, a.Outcome, a.From, a.To, a.Transition)
		results = append(results, inbox.Result{ID: e.ID, Status: inbox.StatusProcessed, Destinations: []string{"app"}})
	}
	if err := s.Finish(ctx, "worker-1", results); err != nil {
		log.Fatal(err)
	}

	lane := inbox.Lane{Source: "stripe", Destination: "app"}
	out, err := s.Dispatch(ctx, "app-1", lane, nil, 16, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	var done []inbox.Done
	for _, t := range out.Tasks {
		done = append(done, inbox.Done{Status: inbox.DeliveryDelivered,
			Attempt: inbox.Attempt{EventID: t.Event.ID, Destination: "app", Code: 204}})
	}
	if out, err = s.Dispatch(ctx, "app-1", lane, done, 0, 0); err != nil {
		log.Fatal(err)
	}
	fmt.Println("settled:", len(out.Settled))

	ch, err := s.Entity(ctx, "acme", "charge", "ch_1")
	if err != nil {
		log.Fatal(err)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("ch_1 is", ch.State)
	fmt.Println("processed:", st.Sources["stripe"].ByStatus[inbox.StatusProcessed], "pending:", st.Pending)
	// Output:
	// evt_0: applied "" -> "pending", transition true
	// evt_1: applied "pending" -> "paid", transition true
	// settled: 2
	// ch_1 is paid
	// processed: 2 pending: 0
}
