package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/worker"
)

// syncBuffer is a log sink safe for the pool's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *bundle) captureLog() *syncBuffer {
	buf := &syncBuffer{}
	b.opts.Logger = slog.New(slog.NewTextHandler(buf, nil))
	return buf
}

func (b *bundle) lane(source, dest string) inbox.LaneState {
	b.t.Helper()
	st, err := b.store.Stats(context.Background())
	if err != nil {
		b.t.Fatal(err)
	}
	for _, l := range st.Lanes {
		if l.Source == source && l.Destination == dest {
			return l
		}
	}
	b.t.Fatalf("no state for %s/%s in %+v", source, dest, st.Lanes)
	return inbox.LaneState{}
}

// A destination failing pause_after times in a row is paused: its
// deliveries wait (spending no attempts) while other destinations' flow;
// after pause_for one delivery probes it; a failed probe pauses it again,
// a good one resumes it.
func TestFailingDestinationIsPausedThenProbed(t *testing.T) {
	t.Parallel()
	flaky := newDest(t, func(n int, _ http.ResponseWriter) int {
		if n <= 6 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	healthy := newDest(t, nil)
	dst := destination("flaky", flaky, worker.OnEvent, 0)
	dst.MaxInFlight, dst.PauseAfter, dst.PauseFor = 5, 5, 30*time.Second
	b := setup(t,
		worker.Source{Name: "shop", Destinations: []worker.Destination{dst}},
		worker.Source{Name: "crm", Destinations: []worker.Destination{destination("app", healthy, worker.OnEvent, 0)}})
	logs := b.captureLog()
	b.start()
	var evs []inbox.Event
	for i := range 8 {
		evs = append(evs, event(fmt.Sprint("o", i), 1, "paid"))
	}
	ids := b.add(evs...)
	crm := event("c1", 1, "open")
	crm.Source = "crm"
	b.add(crm)

	b.once()
	if n := len(flaky.Calls()); n != 5 {
		t.Fatalf("flaky called %d times, want 5 (its max_in_flight) before it pauses", n)
	}
	if st := b.lane("shop", "flaky"); st.State != inbox.LanePaused || !st.Until.Equal(start.Add(30*time.Second)) || st.Failures != 5 {
		t.Fatalf("lane state %+v, want paused until +30s after 5 failures", st)
	}
	if !strings.Contains(logs.String(), "to=paused") {
		t.Errorf("no log line for the pause:\n%s", logs)
	}

	// Paused: the retries are due, but nothing goes to flaky; the other
	// source's events flow.
	b.clock.Set(start.Add(29 * time.Second))
	crm2 := event("c2", 1, "open")
	crm2.Source = "crm"
	b.add(crm2)
	b.once()
	if n := len(flaky.Calls()); n != 5 {
		t.Errorf("flaky called %d times while paused, want 5", n)
	}
	if n := len(healthy.Calls()); n != 2 {
		t.Errorf("healthy destination called %d times, want 2", n)
	}

	// The pause is over: one probe, which fails and pauses again.
	b.clock.Set(start.Add(30 * time.Second))
	b.once()
	if n := len(flaky.Calls()); n != 6 {
		t.Fatalf("flaky called %d times after the pause, want 6 (one probe)", n)
	}
	if st := b.lane("shop", "flaky"); st.State != inbox.LanePaused || !st.Until.Equal(start.Add(60*time.Second)) {
		t.Fatalf("lane state after a failed probe %+v, want paused until +60s", st)
	}

	// The next probe succeeds: flaky is healthy and takes the rest.
	b.clock.Set(start.Add(60 * time.Second))
	b.once()
	if st := b.lane("shop", "flaky"); st.State != inbox.LaneHealthy || st.Failures != 0 {
		t.Fatalf("lane state after a good probe %+v, want healthy", st)
	}
	for _, id := range ids {
		b.wantStatus(id, inbox.StatusProcessed)
	}
	if n := len(flaky.Calls()); n != 14 {
		t.Errorf("flaky called %d times, want 14 (6 failures, then each of 8 events once)", n)
	}
	if dl := b.delivery(ids[7], "flaky"); dl.Attempts != 1 {
		t.Errorf("an event that waited out the pause has %d attempts, want 1: the pause spent none", dl.Attempts)
	}
	if !strings.Contains(logs.String(), "to=healthy") {
		t.Errorf("no log line for the recovery:\n%s", logs)
	}
}

// A redirect is never followed: the attempt fails for good, naming the
// Location, and nothing is sent there.
func TestRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		elsewhere.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(other.Close)
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, loop := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d loop=%v", code, loop), func(t *testing.T) {
				t.Parallel()
				var self string
				d := newDest(t, func(_ int, w http.ResponseWriter) int {
					target := other.URL + "/moved"
					if loop {
						target = self
					}
					w.Header().Set("Location", target)
					return code
				})
				self = d.URL
				b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{destination("app", d, worker.OnEvent, 0)}})
				b.start()
				ids := b.add(event("o1", 1, "paid"))
				b.once()
				ev := b.wantStatus(ids[0], inbox.StatusDead)
				if !strings.Contains(ev.LastError, fmt.Sprint(code)) || !strings.Contains(ev.LastError, "configure the final URL") {
					t.Errorf("error %q should name the status and ask for the final URL", ev.LastError)
				}
				if dl := b.delivery(ids[0], "app"); dl.Status != inbox.DeliveryFailed {
					t.Errorf("delivery %+v, want failed", dl)
				}
				if n := len(d.Calls()); n != 1 {
					t.Errorf("destination called %d times, want 1", n)
				}
			})
		}
	}
	t.Cleanup(func() {
		if n := elsewhere.Load(); n != 0 {
			t.Errorf("the Location was called %d times", n)
		}
	})
}

// A delivery whose lease passed to another owner while its attempt ran
// is not recorded over the new owner's: the attempt is logged, the lost
// lease counted, the delivery left to its owner.
func TestLostDeliveryLeaseIsCounted(t *testing.T) {
	t.Parallel()
	var b *bundle
	lane := inbox.Lane{Source: "shop", Destination: "app"}
	var taken atomic.Bool
	d := newDest(t, func(int, http.ResponseWriter) int {
		// The attempt outlives its lease, and another node takes the
		// delivery over.
		b.clock.Advance(2 * time.Minute)
		out, err := b.store.Dispatch(context.Background(), "other", lane, nil, 1, time.Hour)
		taken.Store(err == nil && len(out.Tasks) == 1)
		return http.StatusNoContent
	})
	b = setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{destination("app", d, worker.OnEvent, 0)}})
	b.opts.Lease = time.Minute
	b.start()
	ids := b.add(event("o1", 1, "paid"))
	b.once()
	if !taken.Load() {
		t.Fatal("the other owner could not take the expired lease")
	}
	if n := b.obs.lostCount("delivery"); n != 1 {
		t.Errorf("observer saw %d lost leases, want 1", n)
	}
	b.wantStatus(ids[0], inbox.StatusDelivering)
	if dl := b.delivery(ids[0], "app"); dl.Status != inbox.DeliveryPending || dl.Attempts != 0 {
		t.Errorf("delivery %+v, want pending and untouched under the other owner", dl)
	}
	log, err := b.store.Attempts(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || log[0].Code != http.StatusNoContent {
		t.Errorf("attempt log %+v, want the one attempt", log)
	}
}

// The adversary's scenario: source mix delivers to good and to bad,
// which never answers (each attempt ends at its timeout); max_attempts 3.
// good gets each event exactly once; bad gets at most 3 attempts per
// event; every event ends dead naming bad; another source's events are
// delivered while bad hangs; shutdown with attempts hanging returns once
// they end, and records them.
func TestHangingDestinationHurtsOnlyItself(t *testing.T) {
	t.Parallel()
	const events, others, maxAttempts = 200, 20, 3
	release := make(chan struct{})
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	var (
		mu          sync.Mutex
		badAttempts = map[string]int{}
		goodGot     = map[string]int{}
	)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		badAttempts[r.Header.Get("webhook-id")]++
		mu.Unlock()
		hang(w, r)
	}))
	t.Cleanup(bad.Close)
	t.Cleanup(func() { close(release) })
	good := newDest(t, func(int, http.ResponseWriter) int { return http.StatusNoContent })
	otherDone := make(chan struct{})
	var otherN atomic.Int32
	other := newDest(t, func(n int, _ http.ResponseWriter) int {
		if otherN.Add(1) == others {
			close(otherDone)
		}
		return http.StatusNoContent
	})

	badDst := destination("bad", &dest{URL: bad.URL}, worker.OnEvent, maxAttempts)
	badDst.Timeout, badDst.RetryInitial, badDst.RetryMaxDelay, badDst.MaxInFlight = 250*time.Millisecond, 10*time.Millisecond, 20*time.Millisecond, 32
	b := setup(t,
		worker.Source{Name: "mix", Destinations: []worker.Destination{destination("good", good, worker.OnEvent, maxAttempts), badDst}},
		worker.Source{Name: "other", Destinations: []worker.Destination{destination("app", other, worker.OnEvent, 0)}})
	b.clock.Set(time.Time{})
	b.opts.Lease, b.opts.Workers, b.opts.Idle = 5*time.Second, 2, 20*time.Millisecond
	obs := b.obs
	p := b.start()

	var mixEvents []inbox.Event
	for i := range events {
		ev := event(fmt.Sprint("m", i), 1, "paid")
		ev.Source = "mix"
		mixEvents = append(mixEvents, ev)
	}
	mixIDs := b.add(mixEvents...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(ctx) }()
	p.Notify()
	var otherEvents []inbox.Event
	for i := range others {
		ev := event(fmt.Sprint("x", i), 1, "open")
		ev.Source = "other"
		otherEvents = append(otherEvents, ev)
	}
	b.add(otherEvents...)
	p.Notify()

	select {
	case <-otherDone:
	case <-time.After(time.Minute):
		t.Fatalf("the other source's events stalled: %d of %d", otherN.Load(), others)
	}
	if n := obs.deliveredCount("mix/bad/dead"); n == events {
		t.Errorf("the other source waited for bad to give up on every event")
	}

	waitFor(t, time.Minute, func() bool {
		st, err := b.store.Stats(context.Background())
		return err == nil && st.Pending == 0
	})
	for _, id := range mixIDs {
		ev := b.wantStatus(id, inbox.StatusDead)
		if !strings.Contains(ev.LastError, "bad:") || strings.Contains(ev.LastError, "good:") {
			t.Fatalf("event %d: error %q, want it to name bad only", id, ev.LastError)
		}
		if dl := b.delivery(id, "good"); dl.Status != inbox.DeliveryDelivered {
			t.Fatalf("event %d: good's delivery %+v, want delivered", id, dl)
		}
	}
	for _, c := range good.Calls() {
		goodGot[c.id]++
	}
	if len(goodGot) != events {
		t.Errorf("good got %d distinct events, want %d", len(goodGot), events)
	}
	for id, n := range goodGot {
		if n != 1 {
			t.Errorf("good got %s %d times", id, n)
		}
	}
	mu.Lock()
	for id, n := range badAttempts {
		if n > maxAttempts {
			t.Errorf("bad got %s %d times, want at most %d", id, n, maxAttempts)
		}
	}
	mu.Unlock()
	if n := obs.deliveredCount("mix/bad/dead"); n != events {
		t.Errorf("observer saw bad give up on %d events, want %d", n, events)
	}

	// Shutdown while attempts hang: Run returns once they end (at their
	// timeout), and records them.
	last := event("late", 1, "paid")
	last.Source = "mix"
	lateID := b.add(last)[0]
	p.Notify()
	waitFor(t, time.Minute, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return badAttempts[b.get(lateID).Hash.String()] == 1
	})
	cancel()
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after its context ended")
	}
	log, err := b.store.Attempts(context.Background(), lateID)
	if err != nil {
		t.Fatal(err)
	}
	var recorded bool
	for _, a := range log {
		recorded = recorded || a.Destination == "bad"
	}
	if !recorded {
		t.Errorf("the attempt hanging at shutdown was not recorded: %+v", log)
	}
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A destination with types gets only the events whose type matches one of
// its patterns; an event no destination wants is processed at once.
func TestTypesFilterADestination(t *testing.T) {
	t.Parallel()
	charges, all := newDest(t, nil), newDest(t, nil)
	only := destination("charges", charges, worker.OnEvent, 0)
	only.Types = []string{"charge.*", "orders/*"}
	b := setup(t,
		worker.Source{Name: "shop", Destinations: []worker.Destination{only}},
		worker.Source{Name: "crm", Destinations: []worker.Destination{destination("all", all, worker.OnEvent, 0)}})
	b.start()
	var evs []inbox.Event
	for i, typ := range []string{"charge.succeeded", "invoice.paid", "orders/create", "orders/create/x", ""} {
		ev := event(fmt.Sprint("o", i), 1, "paid")
		ev.Type = typ
		evs = append(evs, ev)
	}
	crm := event("c1", 1, "open")
	crm.Source, crm.Type = "crm", "invoice.paid"
	ids := b.add(append(evs, crm)...)
	b.once()
	var got []string
	for _, c := range charges.Calls() {
		got = append(got, c.body)
	}
	if len(got) != 2 || !strings.Contains(strings.Join(got, " "), `"o0"`) || !strings.Contains(strings.Join(got, " "), `"o2"`) {
		t.Errorf("charges got %q, want o0 (charge.succeeded) and o2 (orders/create)", got)
	}
	for _, id := range ids {
		b.wantStatus(id, inbox.StatusProcessed)
	}
	if n := len(all.Calls()); n != 1 {
		t.Errorf("a destination without types got %d events, want 1", n)
	}
}
