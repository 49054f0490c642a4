package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/worker"
	"github.com/hookgate/hookgate/verify"
)

// batchDest is a signing batch destination posting to d.
func batchDest(t *testing.T, d *dest, max int) worker.Destination {
	t.Helper()
	dst := destination("bulk", d, worker.OnEvent, 0)
	dst.BatchMax = max
	signer, err := verify.NewStandard(secret)
	if err != nil {
		t.Fatal(err)
	}
	dst.Signer = signer
	return dst
}

// batchIDs are the webhook ids of the events a batch call carried.
func batchIDs(t *testing.T, c call) []string {
	t.Helper()
	var elems []struct {
		WebhookID string `json:"webhook_id"`
	}
	if err := json.Unmarshal([]byte(c.body), &elems); err != nil {
		t.Fatalf("batch body %q: %v", c.body, err)
	}
	ids := make([]string, len(elems))
	for i, e := range elems {
		ids[i] = e.WebhookID
	}
	return ids
}

// One answer gives each event of a batch its own outcome: ok delivers
// it, reject fails it for good (its event dead, and only it), retry, an
// unknown status and silence leave it pending for its own retry, each
// attempt logged with the batch's status and answer.
func TestBatchResultsPerEvent(t *testing.T) {
	t.Parallel()
	var hashes []string
	d := newDest(t, func(n int, w http.ResponseWriter) int {
		if n == 1 {
			fmt.Fprintf(w, `{"results":[{"webhook_id":%q,"status":"ok"},{"webhook_id":%q,"status":"retry","error":"locked"},`+
				`{"webhook_id":%q,"status":"reject","error":"no such customer"},{"webhook_id":%q,"status":"later"}]}`,
				hashes[0], hashes[1], hashes[2], hashes[3])
			return 0
		}
		return http.StatusOK
	})
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{batchDest(t, d, 10)}})
	b.start()
	var evs []inbox.Event
	for i := range 5 {
		evs = append(evs, event(fmt.Sprint("o", i), 1, "paid"))
	}
	ids := b.add(evs...)
	for _, id := range ids {
		hashes = append(hashes, b.get(id).Hash.String())
	}
	if r := b.once(); r.Deliveries != 5 {
		t.Fatalf("round made %d deliveries, want 5", r.Deliveries)
	}
	calls := d.Calls()
	if len(calls) != 1 || len(batchIDs(t, calls[0])) != 5 || calls[0].sigErr != nil {
		t.Fatalf("destination got %d calls, want one signed batch of 5", len(calls))
	}
	b.wantStatus(ids[0], inbox.StatusProcessed)
	dead := b.wantStatus(ids[2], inbox.StatusDead)
	if !strings.Contains(dead.LastError, "no such customer") {
		t.Errorf("the rejected event's error %q does not give the destination's reason", dead.LastError)
	}
	wantError := map[int]string{1: "locked", 2: "no such customer", 3: `unknown status "later"`, 4: "leave it out"}
	for i, id := range ids {
		dl := b.delivery(id, "bulk")
		want := map[int]inbox.DeliveryStatus{0: inbox.DeliveryDelivered, 2: inbox.DeliveryFailed}[i]
		if want == "" {
			want = inbox.DeliveryPending
		}
		if dl.Status != want || dl.Attempts != 1 {
			t.Errorf("event %d: delivery %s after %d attempts, want %s after 1", i, dl.Status, dl.Attempts, want)
		}
		log, err := b.store.Attempts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 1 || log[0].Code != http.StatusOK || !strings.HasPrefix(log[0].Body, `{"results":`) ||
			!strings.Contains(log[0].Error, wantError[i]) || (wantError[i] == "") != (log[0].Error == "") {
			t.Errorf("event %d: attempt log %+v, want one attempt with the batch's 200 and answer, and error %q", i, log, wantError[i])
		}
	}
	if got := b.obs.deliveredCount("shop/bulk/retry"); got != 3 {
		t.Errorf("observer counted %d retries, want 3 (one per event)", got)
	}

	// The pending ones go again, together, on their own schedule.
	b.clock.Advance(time.Hour)
	b.once()
	calls = d.Calls()
	if len(calls) != 2 || strings.Join(batchIDs(t, calls[1]), " ") != strings.Join([]string{hashes[1], hashes[3], hashes[4]}, " ") {
		t.Fatalf("second batch carried %v, want the three to retry", batchIDs(t, calls[len(calls)-1]))
	}
	for i, id := range ids {
		if i != 2 {
			b.wantStatus(id, inbox.StatusProcessed)
		}
	}
}

// A batch that fails whole is one failed request to the destination:
// it counts once towards pause_after, however many events it carried.
func TestBatchFailureCountsOnce(t *testing.T) {
	t.Parallel()
	d := newDest(t, status(http.StatusServiceUnavailable))
	dst := batchDest(t, d, 10)
	dst.MaxInFlight, dst.PauseAfter, dst.PauseFor = 1, 2, time.Minute
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{dst}})
	b.start()
	var evs []inbox.Event
	for i := range 30 {
		evs = append(evs, event(fmt.Sprint("o", i), 1, "paid"))
	}
	ids := b.add(evs...)
	b.once()
	if n := len(d.Calls()); n != 2 {
		t.Fatalf("destination got %d batches, want 2 before pause_after (2) paused it", n)
	}
	if st := b.lane("shop", "bulk"); st.State != inbox.LanePaused || st.Failures != 2 {
		t.Errorf("lane %+v, want paused after 2 failures", st)
	}
	if dl := b.delivery(ids[0], "bulk"); dl.Status != inbox.DeliveryPending || dl.Attempts != 1 || dl.Code != http.StatusServiceUnavailable {
		t.Errorf("delivery %+v, want pending after one 503", dl)
	}
	if dl := b.delivery(ids[29], "bulk"); dl.Attempts != 0 {
		t.Errorf("an event of no batch has %d attempts, want 0", dl.Attempts)
	}
}

// onlySender delivers one message at a time.
type onlySender struct{}

func (onlySender) Send(context.Context, deliver.Message) deliver.Outcome {
	return deliver.Outcome{Delivered: true}
}

func TestBatchNeedsABatchSender(t *testing.T) {
	t.Parallel()
	dst := batchDest(t, &dest{URL: "http://127.0.0.1:1"}, 10)
	dst.Sender = onlySender{}
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{dst}})
	if _, err := worker.New(b.opts); !errors.Is(err, worker.ErrNoBatch) {
		t.Errorf("New = %v, want ErrNoBatch", err)
	}
}

// With order: entity a batch carries at most one event of each key, the
// key's head, with its position: the keys' next events go in the next
// batch.
func TestOrderedBatchCarriesOneEventPerKey(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	dst := batchDest(t, d, 10)
	dst.Order = worker.OrderEntity
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{dst}})
	b.start()
	b.add(event("a", 1, "new"), event("a", 2, "paid"), event("b", 1, "new"), event("a", 3, "sent"), event("b", 2, "paid"))
	type element struct {
		Sequence int64 `json:"sequence"`
		Payload  struct {
			Order   string `json:"order"`
			Version int    `json:"version"`
		} `json:"payload"`
	}
	var got []string
	for range 3 {
		b.once()
		calls := d.Calls()
		if len(calls) == 0 {
			t.Fatal("no batch")
		}
		var elems []element
		if err := json.Unmarshal([]byte(calls[len(calls)-1].body), &elems); err != nil {
			t.Fatal(err)
		}
		var batch []string
		for _, e := range elems {
			batch = append(batch, fmt.Sprintf("%s%d@%d", e.Payload.Order, e.Payload.Version, e.Sequence))
		}
		slices.Sort(batch)
		got = append(got, strings.Join(batch, " "))
	}
	if want := []string{"a1@1 b1@1", "a2@2 b2@2", "a3@3"}; strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("batches %q, want %q", got, want)
	}
}

// The deliveries a batch gathers are leased for the wait as well as the
// lease: with a wait longer than the lease, the lane (or another node)
// does not take them again while they wait, so the batch carries each
// once.
func TestBatchLeaseOutlastsTheWait(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	dst := batchDest(t, d, 10)
	dst.BatchWait = 2 * time.Second
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{dst}})
	b.clock.Set(time.Time{})
	b.opts.Lease, b.opts.Idle = time.Second, 20*time.Millisecond
	p := b.start()
	b.add(event("a", 1, "new"), event("b", 1, "new"), event("c", 1, "new"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(ctx) }()
	p.Notify()
	waitFor(t, time.Minute, func() bool { return len(d.Calls()) > 0 })
	cancel()
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after its context ended")
	}
	calls := d.Calls()
	if ids := batchIDs(t, calls[0]); len(calls) != 1 || len(ids) != 3 || ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] {
		t.Errorf("%d batches, the first of %q; want one of the 3 events, each once", len(calls), ids)
	}
}
