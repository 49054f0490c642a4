package worker_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/worker"
)

// In an ordered lane one key failing again and again (an entity the
// destination cannot take) does not open the circuit: the other keys
// keep flowing. Failures of distinct keys in a row still pause it.
func TestOrderedKeyFailingAloneDoesNotPauseTheLane(t *testing.T) {
	t.Parallel()
	var d *dest
	d = newDest(t, func(n int, _ http.ResponseWriter) int {
		body := d.Calls()[n-1].body
		if strings.Contains(body, `"order":"a"`) || strings.Contains(body, `"order":"x`) {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	dst := destination("app", d, worker.OnEvent, 100)
	dst.Order, dst.PauseAfter, dst.PauseFor = worker.OrderEntity, 2, time.Hour
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{dst}})
	b.start()
	b.add(event("a", 1, "paid"))
	b.once()
	for i := 1; i <= 3; i++ {
		b.clock.Set(start.Add(time.Duration(i) * time.Hour))
		b.once()
	}
	if n := len(d.Calls()); n != 4 {
		t.Fatalf("%d calls, want a's 4 attempts", n)
	}
	if st := b.lane("shop", "app"); st.State == inbox.LanePaused || st.Failures != 1 {
		t.Fatalf("lane %+v after one key failed 4 times, want one failure counted, not paused", st)
	}
	b.add(event("b", 1, "paid"))
	b.once()
	calls := d.Calls()
	last := calls[len(calls)-1]
	if !strings.Contains(last.body, `"order":"b"`) || last.header.Get(deliver.HeaderSequence) != "1" {
		t.Fatalf("last call %q with sequence %q, want b's first delivery", last.body, last.header.Get(deliver.HeaderSequence))
	}
	// Two keys failing in a row: the destination is down.
	b.add(event("x1", 1, "paid"), event("x2", 1, "paid"))
	b.once()
	if st := b.lane("shop", "app"); st.State != inbox.LanePaused {
		t.Fatalf("lane %+v after two keys failed in a row, want paused", st)
	}
}
