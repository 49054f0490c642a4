package inboxtest

import (
	"fmt"
	"sync"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

func testDeliveries(b *bundle) {
	ids := b.add(item("a"), item("b"))
	if got := b.deliveries(ids...); len(got[ids[0]]) != 0 || len(got[ids[1]]) != 0 {
		b.t.Fatalf("deliveries before any attempt: %v", got)
	}
	b.record(inbox.Delivery{EventID: ids[0], Destination: "app", Status: inbox.DeliveryFailed, Code: 500, Error: "boom", At: start})
	b.record(inbox.Delivery{EventID: ids[0], Destination: "app", Status: inbox.DeliveryFailed, Code: 0, Error: "timeout", At: start.Add(time.Second)})
	b.record(inbox.Delivery{EventID: ids[0], Destination: "audit", Status: inbox.DeliveryDelivered, Code: 204, At: start})
	got := b.deliveries(ids[0])[ids[0]]["app"]
	want := inbox.Delivery{EventID: ids[0], Destination: "app", Status: inbox.DeliveryFailed, Attempts: 2, Error: "timeout", At: start.Add(time.Second)}
	if !same(got, want) {
		b.t.Errorf("after two failures: %+v, want %+v", got, want)
	}
	b.record(inbox.Delivery{EventID: ids[0], Destination: "app", Status: inbox.DeliveryDelivered, Code: 200, At: start.Add(2 * time.Second)})
	all := b.deliveries(ids...)
	if !sameKeys(all, ids[0]) || len(all[ids[0]]) != 2 {
		b.t.Fatalf("deliveries: %v, want two for event %d only", all, ids[0])
	}
	want = inbox.Delivery{EventID: ids[0], Destination: "app", Status: inbox.DeliveryDelivered, Attempts: 3, Code: 200, At: start.Add(2 * time.Second)}
	if got := all[ids[0]]["app"]; !same(got, want) {
		b.t.Errorf("after delivery: %+v, want %+v", got, want)
	}
	want = inbox.Delivery{EventID: ids[0], Destination: "audit", Status: inbox.DeliveryDelivered, Attempts: 1, Code: 204, At: start}
	if got := all[ids[0]]["audit"]; !same(got, want) {
		b.t.Errorf("other destination: %+v, want %+v", got, want)
	}
}

func testRecordDeliveryConcurrent(b *bundle) {
	const (
		callers = 20
		each    = 5
	)
	ids := b.add(item("a"), item("b"))
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				for _, id := range ids {
					d := inbox.Delivery{EventID: id, Destination: "app", Status: inbox.DeliveryFailed, Code: 500, Error: fmt.Sprint(c, "/", i)}
					if err := b.store.RecordDelivery(b.ctx, d); err != nil {
						b.t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	got := b.deliveries(ids...)
	for _, id := range ids {
		if d := got[id]["app"]; d.Attempts != callers*each {
			b.t.Errorf("event %d: %d attempts recorded by %d concurrent calls", id, d.Attempts, callers*each)
		}
	}
}

// same compares deliveries, times by instant.
func same(a, b inbox.Delivery) bool {
	ta, tb := a.At, b.At
	a.At, b.At = time.Time{}, time.Time{}
	return a == b && ta.Equal(tb)
}
