package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/worker"
)

// A rated destination gets its deliveries one 1/rate apart: eleven
// deliveries at rate 20/s end at least the ten intervals of 50ms after
// the pool started, however early the node leased them.
func TestRateSpacesDeliveries(t *testing.T) {
	t.Parallel()
	const events = 11
	var (
		mu       sync.Mutex
		arrivals []time.Time
		done     = make(chan struct{})
	)
	d := newDest(t, func(n int, _ http.ResponseWriter) int {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		if n == events {
			close(done)
		}
		return http.StatusNoContent
	})
	rated := destination("app", d, worker.OnEvent, 0)
	rated.Rate = inbox.Rate{Events: 20, Per: time.Second}
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{rated}})
	b.clock.Set(time.Time{})
	b.opts.Lease, b.opts.Idle = 5*time.Second, 20*time.Millisecond
	p := b.start()
	var evs []inbox.Event
	for i := range events {
		evs = append(evs, event(fmt.Sprint("o", i), 1, "paid"))
	}
	b.add(evs...)
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	// No slot of the new lane comes before the pool starts.
	start := time.Now()
	go func() { runErr <- p.Run(ctx) }()
	p.Notify()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("waited a minute for the deliveries")
	}
	cancel()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// Each delivery is made at its slot or later, and the first slot is
	// no earlier than the start: the last arrives at least the ten
	// intervals after it, however late the first was made (a loaded
	// machine may make it late, never early).
	if span := arrivals[events-1].Sub(start); span < (events-1)*50*time.Millisecond {
		t.Fatalf("%d deliveries at 20/s arrived within %v of the start; their slots span 500ms", events, span)
	}
}
