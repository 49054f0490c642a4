package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/worker"
	"github.com/hookgate/hookgate/verify"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestProcessedWithOneDelivery(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	dst := destination("app", d, worker.OnEvent, 0)
	signer, err := verify.NewStandard(secret)
	if err != nil {
		t.Fatal(err)
	}
	dst.Signer = signer
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{dst}})
	b.start()
	ev := event("o1", 1, "paid")
	ev.Headers = map[string]string{"Content-Type": "application/vnd.shop+json"}
	ids := b.add(ev)

	if r := b.once(); r != (worker.Round{Events: 1, Deliveries: 1}) {
		t.Fatalf("once = %+v, want 1 event and 1 delivery", r)
	}
	got := b.wantStatus(ids[0], inbox.StatusProcessed)
	if got.Applied == nil || !got.Applied.Transition {
		t.Errorf("applied = %+v, want a transition", got.Applied)
	}
	calls := d.Calls()
	if len(calls) != 1 {
		t.Fatalf("destination called %d times, want 1", len(calls))
	}
	c := calls[0]
	if c.sigErr != nil {
		t.Errorf("signature does not verify: %v", c.sigErr)
	}
	for name, want := range map[string]string{
		"webhook-id":            got.Hash.String(),
		"Content-Type":          "application/vnd.shop+json",
		"X-Hookgate-Source":     "shop",
		"X-Hookgate-Tenant":     "acme",
		"X-Hookgate-Scope":      got.Scope,
		"X-Hookgate-Event-Id":   got.EventID,
		"X-Hookgate-Entity":     "order/o1",
		"X-Hookgate-Transition": "->paid",
	} {
		if v := c.header.Get(name); v != want {
			t.Errorf("%s = %q, want %q", name, v, want)
		}
	}
	if c.body != string(got.Payload) {
		t.Errorf("body = %q, want the payload %q", c.body, got.Payload)
	}
	if n := b.obs.deliveredCount("shop/app/delivered"); n != 1 {
		t.Errorf("observer saw %d deliveries, want 1", n)
	}
	if r := b.once(); r != (worker.Round{}) {
		t.Errorf("a processed event was taken again: %+v", r)
	}
}

func TestContentType(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{destination("app", d, "", 0)}})
	b.start()
	xml := event("o1", 1, "a")
	xml.Payload = []byte("\n <soapenv:Envelope/>")
	given := event("o2", 1, "a")
	given.Headers = map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	b.add(event("o3", 1, "a"), xml, given)
	b.once()
	want := map[string]string{
		string(xml.Payload):                 "text/xml; charset=utf-8",
		string(given.Payload):               "application/x-www-form-urlencoded",
		string(event("o3", 1, "a").Payload): "application/json",
	}
	calls := d.Calls()
	if len(calls) != len(want) {
		t.Fatalf("%d calls, want %d", len(calls), len(want))
	}
	for _, c := range calls {
		if ct := c.header.Get("Content-Type"); ct != want[c.body] {
			t.Errorf("payload %q went as %q, want %q", c.body, ct, want[c.body])
		}
	}
}

const orderSchema = `{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"required": ["order", "state"],
	"properties": {"order": {"type": "string"}, "state": {"type": "string"}}
}`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSchemaInvalidDiesAloneAndIsNeverDelivered(t *testing.T) {
	t.Parallel()
	schema, err := worker.CompileSchema(writeFile(t, "order.json", orderSchema))
	if err != nil {
		t.Fatal(err)
	}
	d := newDest(t, nil)
	b := setup(t, worker.Source{Name: "shop", Schema: schema, Destinations: []worker.Destination{destination("app", d, worker.OnEvent, 0)}})
	b.start()
	events := make([]inbox.Event, 200)
	for i := range events {
		events[i] = event("o"+string(rune('a'+i%26))+strings.Repeat("x", i/26), 1, "new")
	}
	events[117].Payload = []byte(`{"order": 117}`)
	ids := b.add(events...)

	if r := b.once(); r.Events != 200 || r.Deliveries != 199 {
		t.Fatalf("once = %+v, want 200 events and 199 deliveries", r)
	}
	for i, id := range ids {
		if i == 117 {
			continue
		}
		b.wantStatus(id, inbox.StatusProcessed)
	}
	bad := b.wantStatus(ids[117], inbox.StatusDead)
	if !strings.Contains(bad.LastError, "/order") || !strings.Contains(bad.LastError, "state") {
		t.Errorf("dead event's error %q should say what is wrong (order's type, missing state)", bad.LastError)
	}
	if bad.Applied != nil {
		t.Errorf("an invalid event was applied: %+v", bad.Applied)
	}
	calls := d.Calls()
	if len(calls) != 199 {
		t.Errorf("destination called %d times, want 199", len(calls))
	}
	for _, c := range calls {
		if c.id == bad.Hash.String() {
			t.Errorf("the invalid event was delivered")
		}
	}
	if n := b.obs.deadCount("shop/invalid"); n != 1 {
		t.Errorf("observer saw %d invalid deaths, want 1", n)
	}
}

func TestNotJSONIsInvalid(t *testing.T) {
	t.Parallel()
	schema, err := worker.CompileSchema(writeFile(t, "order.json", orderSchema))
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, worker.Source{Name: "shop", Schema: schema})
	b.start()
	ev := event("o1", 1, "new")
	ev.Payload = []byte(`{"order":`)
	ids := b.add(ev)
	b.once()
	if got := b.wantStatus(ids[0], inbox.StatusDead); !strings.Contains(got.LastError, "not JSON") {
		t.Errorf("error = %q, want it to say the payload is not JSON", got.LastError)
	}
}

func TestUnknownSourceIsDead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.start()
	ids := b.add(event("o1", 1, "new"))
	b.once()
	if got := b.wantStatus(ids[0], inbox.StatusDead); !strings.Contains(got.LastError, `"shop" is not configured`) {
		t.Errorf("error = %q, want it to name the missing source", got.LastError)
	}
}

func transitions(calls []call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.header.Get("X-Hookgate-Entity")+" "+c.header.Get("X-Hookgate-Transition"))
	}
	slices.Sort(out)
	return out
}

func TestOnTransitionGetsOnlyTransitions(t *testing.T) {
	t.Parallel()
	all, changes := newDest(t, nil), newDest(t, nil)
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{
		destination("all", all, worker.OnEvent, 0),
		destination("changes", changes, worker.OnTransition, 0),
	}})
	b.start()
	b.add(event("o1", 1, "pending"), event("o1", 2, "pending"), event("o1", 3, "paid"), event("o2", 1, "new"))
	b.once()

	want := []string{"order/o1 ->pending", "order/o1 pending->paid", "order/o2 ->new"}
	if got := transitions(changes.Calls()); !slices.Equal(got, want) {
		t.Errorf("on:transition got %q, want %q", got, want)
	}
	want = []string{"order/o1 ", "order/o1 ->pending", "order/o1 pending->paid", "order/o2 ->new"}
	if got := transitions(all.Calls()); !slices.Equal(got, want) {
		t.Errorf("on:event got %q, want %q", got, want)
	}
}

func TestStaleEventChangesNothing(t *testing.T) {
	t.Parallel()
	events, changes, audit := newDest(t, nil), newDest(t, nil), newDest(t, nil)
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{
		destination("events", events, worker.OnEvent, 0),
		destination("changes", changes, worker.OnTransition, 0),
		destination("audit", audit, worker.OnAll, 0),
	}})
	b.start()
	b.add(event("o1", 2, "paid"))
	b.once()
	ids := b.add(event("o1", 1, "pending"))
	b.once()

	stale := b.wantStatus(ids[0], inbox.StatusProcessed)
	if stale.Applied == nil || stale.Applied.Outcome != inbox.ApplyStale || stale.Applied.Transition {
		t.Errorf("applied = %+v, want stale without transition", stale.Applied)
	}
	if got := transitions(changes.Calls()); !slices.Equal(got, []string{"order/o1 ->paid"}) {
		t.Errorf("on:transition got %q, want only the first event's transition", got)
	}
	// A stale event fires no side effect: only the audit sink gets it.
	if n := len(events.Calls()); n != 1 {
		t.Errorf("on:event destination called %d times, want 1 (not for the stale event)", n)
	}
	if n := len(audit.Calls()); n != 2 {
		t.Errorf("on:all destination called %d times, want 2", n)
	}
	ent, err := b.store.Entity(context.Background(), "acme", "order", "o1")
	if err != nil {
		t.Fatal(err)
	}
	if ent.State != "paid" || ent.Order != 2 {
		t.Errorf("entity = %+v, want state paid at order 2", ent)
	}
}

func TestRetryWithGrowingDelaysThenDeliveredOnce(t *testing.T) {
	t.Parallel()
	d := newDest(t, func(n int, _ http.ResponseWriter) int {
		if n <= 3 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{destination("app", d, worker.OnEvent, 0)}})
	b.start()
	ids := b.add(event("o1", 1, "paid"))

	// Rand is 0.5, so each delay is half its ceiling: the default base
	// (the configuration's retry_initial) doubling.
	base := worker.DefaultBackoffBase
	for i, want := range []time.Duration{base / 2, base, 2 * base} {
		now := b.clock.Now()
		if r := b.once(); r.Deliveries != 1 {
			t.Fatalf("round %d made %d deliveries, want 1", i+1, r.Deliveries)
		}
		b.wantStatus(ids[0], inbox.StatusDelivering)
		dl := b.delivery(ids[0], "app")
		if dl.Status != inbox.DeliveryPending || dl.Attempts != i+1 {
			t.Errorf("round %d: delivery %+v, want pending after %d attempts", i+1, dl, i+1)
		}
		if got := dl.NextAttemptAt.Sub(now); got != want {
			t.Errorf("round %d: next attempt in %v, want %v", i+1, got, want)
		}
		if !strings.Contains(dl.Error, "HTTP 500") || dl.Code != http.StatusInternalServerError {
			t.Errorf("round %d: error %q (code %d), want the HTTP status", i+1, dl.Error, dl.Code)
		}
		b.clock.Set(dl.NextAttemptAt.Add(-time.Millisecond))
		if r := b.once(); r != (worker.Round{}) {
			t.Fatalf("round %d: %+v before the delivery was due", i+1, r)
		}
		b.clock.Set(dl.NextAttemptAt)
	}
	b.once()
	b.wantStatus(ids[0], inbox.StatusProcessed)
	calls := d.Calls()
	if len(calls) != 4 {
		t.Fatalf("destination called %d times, want 4", len(calls))
	}
	ev := b.get(ids[0])
	for i, c := range calls {
		if c.id != ev.Hash.String() {
			t.Errorf("call %d: webhook-id %q, want %q on every retry", i+1, c.id, ev.Hash.String())
		}
	}
	if got := b.delivery(ids[0], "app"); got.Status != inbox.DeliveryDelivered || got.Attempts != 4 || got.Code != http.StatusNoContent {
		t.Errorf("delivery record = %+v, want delivered after 4 attempts", got)
	}
	log, err := b.store.Attempts(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 4 || log[0].Code != 500 || log[3].Code != 204 || log[3].Error != "" {
		t.Errorf("attempt log = %+v, want 3 failures then the delivery", log)
	}
	if got := b.obs.deliveredCount("shop/app/retry"); got != 3 {
		t.Errorf("observer saw %d retries, want 3", got)
	}
	b.clock.Advance(time.Hour)
	if r := b.once(); r != (worker.Round{}) {
		t.Errorf("processed event taken again: %+v", r)
	}
}

func TestPermanentStatusIsDead(t *testing.T) {
	t.Parallel()
	d := newDest(t, func(int, http.ResponseWriter) int { return http.StatusUnprocessableEntity })
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{destination("app", d, worker.OnEvent, 0)}})
	b.start()
	ids := b.add(event("o1", 1, "paid"))
	b.once()
	ev := b.wantStatus(ids[0], inbox.StatusDead)
	if !strings.Contains(ev.LastError, "HTTP 422") || !strings.Contains(ev.LastError, "app") {
		t.Errorf("error %q should name the destination and status", ev.LastError)
	}
	if n := b.obs.deadCount("shop/delivery"); n != 1 {
		t.Errorf("observer saw %d delivery deaths, want 1", n)
	}
	b.clock.Advance(24 * time.Hour)
	if r := b.once(); r != (worker.Round{}) || len(d.Calls()) != 1 {
		t.Errorf("dead event retried: %+v, %d calls", r, len(d.Calls()))
	}
}

func TestOutOfAttemptsIsDead(t *testing.T) {
	t.Parallel()
	d := newDest(t, status(http.StatusServiceUnavailable))
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{destination("app", d, worker.OnEvent, 3)}})
	b.start()
	ids := b.add(event("o1", 1, "paid"))
	for range 2 {
		b.once()
		b.wantStatus(ids[0], inbox.StatusDelivering)
		b.clock.Set(b.delivery(ids[0], "app").NextAttemptAt)
	}
	b.once()
	ev := b.wantStatus(ids[0], inbox.StatusDead)
	if !strings.Contains(ev.LastError, "attempt 3 of 3") || !strings.Contains(ev.LastError, "app") {
		t.Errorf("error %q should name the destination and say the attempts ran out", ev.LastError)
	}
	if n := len(d.Calls()); n != 3 {
		t.Errorf("destination called %d times, want 3", n)
	}
	if n := b.obs.deadCount("shop/delivery"); n != 1 {
		t.Errorf("observer saw %d delivery deaths, want 1", n)
	}
	b.clock.Advance(24 * time.Hour)
	if r := b.once(); r != (worker.Round{}) {
		t.Errorf("dead event taken again: %+v", r)
	}
}

// G9: each destination keeps its own schedule. One asks to wait with
// Retry-After; the other takes the event at once and is never called
// again; the first is not called before its time.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	limited := func(n int, w http.ResponseWriter) int {
		if n > 1 {
			return http.StatusNoContent
		}
		w.Header().Set("Retry-After", "30")
		return http.StatusTooManyRequests
	}
	slow, ok := newDest(t, limited), newDest(t, nil)
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{
		destination("slow", slow, worker.OnEvent, 0),
		destination("ok", ok, worker.OnEvent, 0),
	}})
	b.start()
	ids := b.add(event("o1", 1, "paid"))
	b.once()
	if got := b.delivery(ids[0], "ok"); got.Status != inbox.DeliveryDelivered || len(ok.Calls()) != 1 {
		t.Fatalf("ok: %+v after %d calls, want delivered at once", got, len(ok.Calls()))
	}
	slowDl := b.delivery(ids[0], "slow")
	if slowDl.Status != inbox.DeliveryPending || slowDl.NextAttemptAt.Sub(start) != 30*time.Second {
		t.Errorf("slow: %+v, want pending until +30s (its Retry-After)", slowDl)
	}
	b.clock.Set(start.Add(30*time.Second - time.Millisecond))
	b.once()
	if n := len(slow.Calls()); n != 1 {
		t.Errorf("slow called %d times before its Retry-After passed, want 1", n)
	}
	b.clock.Set(start.Add(30 * time.Second))
	b.once()
	b.wantStatus(ids[0], inbox.StatusProcessed)
	if len(slow.Calls()) != 2 || len(ok.Calls()) != 1 {
		t.Errorf("calls: slow %d (want 2), ok %d (want 1)", len(slow.Calls()), len(ok.Calls()))
	}
}

func TestDeliveredDestinationsAreNotCalledAgain(t *testing.T) {
	t.Parallel()
	t.Run("after a retry", func(t *testing.T) {
		t.Parallel()
		ok := newDest(t, nil)
		flaky := newDest(t, func(n int, _ http.ResponseWriter) int {
			if n == 1 {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{
			destination("ok", ok, worker.OnEvent, 0),
			destination("flaky", flaky, worker.OnEvent, 0),
		}})
		b.start()
		ids := b.add(event("o1", 1, "paid"))
		b.once()
		b.clock.Set(b.delivery(ids[0], "flaky").NextAttemptAt)
		b.once()
		b.wantStatus(ids[0], inbox.StatusProcessed)
		if len(ok.Calls()) != 1 || len(flaky.Calls()) != 2 {
			t.Errorf("calls: ok %d (want 1), flaky %d (want 2)", len(ok.Calls()), len(flaky.Calls()))
		}
	})
	t.Run("after a crashed dispatcher's lease expires", func(t *testing.T) {
		t.Parallel()
		a, c := newDest(t, nil), newDest(t, nil)
		b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{
			destination("a", a, worker.OnEvent, 0),
			destination("c", c, worker.OnEvent, 0),
		}})
		b.start()
		ids := b.add(event("o1", 1, "paid"))
		ctx := context.Background()
		// Another node applies the event, delivers it to a and records
		// that, then leases its delivery to c and dies.
		evs, err := b.store.Lease(ctx, "crashed", 10, time.Minute)
		if err != nil || len(evs) != 1 {
			t.Fatalf("lease: %v, %d events", err, len(evs))
		}
		if _, err := b.store.Apply(ctx, evs); err != nil {
			t.Fatal(err)
		}
		if err := b.store.Finish(ctx, "crashed", []inbox.Result{{ID: ids[0], Status: inbox.StatusProcessed, Destinations: []string{"a", "c"}}}); err != nil {
			t.Fatal(err)
		}
		laneA, laneC := inbox.Lane{Source: "shop", Destination: "a"}, inbox.Lane{Source: "shop", Destination: "c"}
		if got, err := b.store.Dispatch(ctx, "crashed", laneA, nil, 1, time.Minute); err != nil || len(got.Tasks) != 1 {
			t.Fatalf("dispatch a: %v, %+v", err, got)
		}
		done := inbox.Done{Attempt: inbox.Attempt{EventID: ids[0], Destination: "a", Code: 200}, Status: inbox.DeliveryDelivered}
		if _, err := b.store.Dispatch(ctx, "crashed", laneA, []inbox.Done{done}, 0, time.Minute); err != nil {
			t.Fatal(err)
		}
		if got, err := b.store.Dispatch(ctx, "crashed", laneC, nil, 1, time.Minute); err != nil || len(got.Tasks) != 1 {
			t.Fatalf("dispatch c: %v, %+v", err, got)
		}
		if r := b.once(); r != (worker.Round{}) {
			t.Fatalf("took %+v that another node holds or finished", r)
		}
		b.clock.Advance(time.Minute)
		if r := b.once(); r != (worker.Round{Deliveries: 1}) {
			t.Fatalf("after the lease expired: %+v, want the one delivery to c", r)
		}
		b.wantStatus(ids[0], inbox.StatusProcessed)
		if len(a.Calls()) != 0 || len(c.Calls()) != 1 {
			t.Errorf("calls: a %d (want 0, already delivered), c %d (want 1)", len(a.Calls()), len(c.Calls()))
		}
	})
}

// An observer that panics is logged; it changes no outcome.
func TestPanickingObserverChangesNothing(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	dests := []worker.Destination{destination("app", d, worker.OnEvent, 0)}
	b := setup(t, worker.Source{Name: "shop", Destinations: dests}, worker.Source{Name: "crm", Destinations: dests})
	b.obs.panicOn = func(source, _, _ string) bool { return source == "shop" }
	b.start()
	other := event("o2", 1, "new")
	other.Source = "crm"
	ids := b.add(event("o1", 1, "paid"), other)

	b.once()
	b.wantStatus(ids[0], inbox.StatusProcessed)
	b.wantStatus(ids[1], inbox.StatusProcessed)
	b.clock.Advance(time.Hour)
	b.once()
	if n := len(d.Calls()); n != 2 {
		t.Errorf("destination called %d times, want 2 (once per event)", n)
	}
}

// failingStore fails or panics in Apply and ApplyFinish for batches
// holding event "bad".
type failingStore struct {
	inbox.Store
	panics bool
	off    atomic.Bool
}

var errApply = errors.New("constraint failed")

func (s *failingStore) Apply(ctx context.Context, events []inbox.Event) ([]inbox.Applied, error) {
	if err := s.fail(events); err != nil {
		return nil, err
	}
	return s.Store.Apply(ctx, events)
}

func (s *failingStore) ApplyFinish(ctx context.Context, owner string, events []inbox.Event, decide func([]inbox.Applied) ([]inbox.Result, error)) error {
	if err := s.fail(events); err != nil {
		return err
	}
	return s.Store.(inbox.ApplyFinisher).ApplyFinish(ctx, owner, events, decide)
}

// fail fails or panics for a batch holding "bad" until off.
func (s *failingStore) fail(events []inbox.Event) error {
	if !s.off.Load() && slices.ContainsFunc(events, func(e inbox.Event) bool { return e.EventID == "bad" }) {
		if s.panics {
			panic("apply exploded")
		}
		return errApply
	}
	return nil
}

func TestApplyFailureFailsAlone(t *testing.T) {
	t.Parallel()
	for _, panics := range []bool{false, true} {
		name := map[bool]string{false: "error", true: "panic"}[panics]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := newDest(t, nil)
			b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{destination("app", d, worker.OnEvent, 0)}})
			fs := &failingStore{Store: b.store, panics: panics}
			b.opts.Store = fs
			b.start()
			bad := event("o2", 1, "new")
			bad.EventID = "bad"
			ids := b.add(event("o1", 1, "new"), bad, event("o3", 1, "new"))
			b.once()
			b.wantStatus(ids[0], inbox.StatusProcessed)
			b.wantStatus(ids[2], inbox.StatusProcessed)
			ev := b.wantStatus(ids[1], inbox.StatusRetry)
			want := map[bool]string{false: "apply: constraint failed", true: "panic: apply exploded"}[panics]
			if !strings.Contains(ev.LastError, want) {
				t.Errorf("error = %q, want %q", ev.LastError, want)
			}
			if n := len(d.Calls()); n != 2 {
				t.Errorf("destination called %d times, want 2", n)
			}
			fs.off.Store(true)
			b.clock.Set(ev.NextAttemptAt)
			b.once()
			b.wantStatus(ids[1], inbox.StatusProcessed)
		})
	}
}

func TestPanickingEventDiesWhenOutOfAttempts(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{destination("app", d, worker.OnEvent, 3)}})
	b.opts.Store = &failingStore{Store: b.store, panics: true}
	b.start()
	bad := event("o1", 1, "new")
	bad.EventID = "bad"
	ids := b.add(bad)
	for range 2 {
		b.once()
		b.clock.Set(b.wantStatus(ids[0], inbox.StatusRetry).NextAttemptAt)
	}
	b.once()
	ev := b.wantStatus(ids[0], inbox.StatusDead)
	if !strings.Contains(ev.LastError, "panic: apply exploded") || !strings.Contains(ev.LastError, "attempt 3 of 3") {
		t.Errorf("error = %q, want the panic and the attempts", ev.LastError)
	}
	if n := b.obs.deadCount("shop/panic"); n != 1 {
		t.Errorf("observer saw %d panic deaths, want 1", n)
	}
	if n := len(d.Calls()); n != 0 {
		t.Errorf("destination called %d times, want 0", n)
	}
}

// panickingStore panics in its first Finish, outside any one event.
type panickingStore struct {
	inbox.Store
	panicked atomic.Bool
}

func (s *panickingStore) Finish(ctx context.Context, owner string, results []inbox.Result) error {
	if s.panicked.CompareAndSwap(false, true) {
		panic("finish exploded")
	}
	return s.Store.Finish(ctx, owner, results)
}

func TestPanicOutsideAnEventRetriesTheBatch(t *testing.T) {
	t.Parallel()
	d := newDest(t, nil)
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{destination("app", d, worker.OnEvent, 0)}})
	b.opts.Store = &panickingStore{Store: b.store}
	b.start()
	ids := b.add(event("o1", 1, "new"), event("o2", 1, "new"))
	if r := b.once(); r.Events != 2 {
		t.Fatalf("leased %d, want 2", r.Events)
	}
	for _, id := range ids {
		if ev := b.wantStatus(id, inbox.StatusRetry); !strings.Contains(ev.LastError, "panic: finish exploded") {
			t.Errorf("event %d: error %q, want the panic", id, ev.LastError)
		}
	}
	b.clock.Advance(time.Hour)
	b.once()
	for _, id := range ids {
		b.wantStatus(id, inbox.StatusProcessed)
	}
}

func TestRunProcessesAStreamExactlyOnce(t *testing.T) {
	t.Parallel()
	const chunks, perChunk = 20, 25
	const total = chunks * perChunk
	arrived := func(done chan struct{}) func(int, http.ResponseWriter) int {
		return func(n int, _ http.ResponseWriter) int {
			if n == total {
				close(done)
			}
			return http.StatusNoContent
		}
	}
	doneA, doneB := make(chan struct{}), make(chan struct{})
	a, c := newDest(t, arrived(doneA)), newDest(t, arrived(doneB))
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{
		destination("a", a, worker.OnEvent, 0),
		destination("c", c, worker.OnEvent, 0),
	}})
	b.opts.Workers, b.opts.Batch = 4, 10
	// Workers only look again when notified: the stream must wake them.
	b.opts.Idle = time.Hour
	p := b.start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(ctx) }()

	for i := range chunks {
		events := make([]inbox.Event, perChunk)
		for j := range events {
			events[j] = event("o"+strings.Repeat("i", i)+strings.Repeat("j", j), 1, "new")
		}
		b.add(events...)
		p.Notify()
	}
	for _, done := range []chan struct{}{doneA, doneB} {
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("deliveries stalled: a %d, c %d of %d", len(a.Calls()), len(c.Calls()), total)
		}
	}
	cancel()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]*dest{"a": a, "c": c} {
		seen := map[string]bool{}
		for _, call := range d.Calls() {
			if seen[call.id] {
				t.Errorf("%s got %s twice", name, call.id)
			}
			seen[call.id] = true
		}
		if len(seen) != total {
			t.Errorf("%s got %d events, want %d", name, len(seen), total)
		}
	}
	st, err := b.store.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Sources["shop"].ByStatus[inbox.StatusProcessed]; n != total || st.Pending != 0 {
		t.Errorf("%d processed, %d pending; want %d and 0", n, st.Pending, total)
	}
}

func TestShutdownFinishesTheBatch(t *testing.T) {
	t.Parallel()
	inFlight, release := make(chan struct{}), make(chan struct{})
	d := newDest(t, func(int, http.ResponseWriter) int {
		close(inFlight)
		<-release
		return http.StatusNoContent
	})
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{destination("app", d, worker.OnEvent, 0)}})
	b.opts.Idle = time.Hour
	p := b.start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(ctx) }()
	ids := b.add(event("o1", 1, "new"))
	p.Notify()
	<-inFlight
	cancel()
	close(release)
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	b.wantStatus(ids[0], inbox.StatusProcessed)
}

func TestProcessOnceOnAnEmptyInbox(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.start()
	if r := b.once(); r != (worker.Round{}) {
		t.Errorf("took %+v from an empty inbox", r)
	}
}

func TestNewWithoutStore(t *testing.T) {
	t.Parallel()
	if _, err := worker.New(worker.Options{}); !errors.Is(err, worker.ErrNoStore) {
		t.Errorf("New without a store: %v, want ErrNoStore", err)
	}
}

func TestCompileSchema(t *testing.T) {
	t.Parallel()
	good := writeFile(t, "good.json", orderSchema)
	if _, err := worker.CompileSchema(good); err != nil {
		t.Errorf("good schema: %v", err)
	}
	broken := writeFile(t, "broken.json", `{"type": `)
	missing := filepath.Join(t.TempDir(), "missing.json")
	wrong := writeFile(t, "wrong.json", `{"type": "no-such-type"}`)
	for _, path := range []string{broken, missing, wrong} {
		_, err := worker.CompileSchema(path)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("CompileSchema(%s) = %v, want an error naming the file", filepath.Base(path), err)
		}
	}
}

// G7: a destination refusing one event for good (422) kills only that
// event: the other events delivered to it in the same dispatch, on the
// same lane, are delivered and processed, each called once.
func TestPermanentRefusalKillsOnlyItsEvent(t *testing.T) {
	t.Parallel()
	app := newDest(t, nil)
	app.answer = func(n int, _ http.ResponseWriter) int {
		if strings.Contains(app.Calls()[n-1].body, `"o2"`) {
			return http.StatusUnprocessableEntity
		}
		return http.StatusNoContent
	}
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{destination("app", app, worker.OnEvent, 0)}})
	b.start()
	ids := b.add(event("o1", 1, "paid"), event("o2", 1, "paid"), event("o3", 1, "paid"), event("o4", 1, "paid"))
	if r := b.once(); r.Events != len(ids) {
		t.Fatalf("leased %d events in one batch, want %d", r.Events, len(ids))
	}
	for i, id := range ids {
		d := b.delivery(id, "app")
		if i == 1 {
			if ev := b.wantStatus(id, inbox.StatusDead); !strings.Contains(ev.LastError, "422") {
				t.Errorf("refused event's error %q should name the status", ev.LastError)
			}
			if d.Status != inbox.DeliveryFailed || d.Attempts != 1 || d.Code != http.StatusUnprocessableEntity {
				t.Errorf("refused delivery: %+v", d)
			}
			continue
		}
		b.wantStatus(id, inbox.StatusProcessed)
		if d.Status != inbox.DeliveryDelivered || d.Attempts != 1 || d.Code != http.StatusNoContent {
			t.Errorf("delivery of event %d, sent beside the refused one: %+v", id, d)
		}
	}
	if n := b.obs.lostCount("delivery"); n != 0 {
		t.Errorf("%d deliveries recorded as lost by their own dispatcher", n)
	}
	b.once()
	if n := len(app.Calls()); n != len(ids) {
		t.Errorf("destination called %d times, want %d (once per event)", n, len(ids))
	}
}

// A destination's max_in_flight bounds its concurrent deliveries across
// the pool's workers. The destination holds each request until more than
// the bound are in flight, every event has been sent, or 50ms pass (the
// bound is then full and nothing more can arrive), so deliveries that
// ignore the bound pile up above it. The timer only ends a wait; nothing
// is asserted about time.
func TestMaxInFlightBoundsADestination(t *testing.T) {
	t.Parallel()
	const limit, events = 2, 10
	var (
		mu                    sync.Mutex
		active, most, started int
		gate                  = make(chan struct{})
		all                   = make(chan struct{})
	)
	d := newDest(t, func(int, http.ResponseWriter) int {
		mu.Lock()
		active++
		started++
		most = max(most, active)
		wait := gate
		if active > limit || started == events {
			close(gate)
			gate = make(chan struct{})
		}
		if started == events {
			close(all)
		}
		mu.Unlock()
		select {
		case <-wait:
		case <-time.After(50 * time.Millisecond):
		}
		mu.Lock()
		active--
		mu.Unlock()
		return http.StatusNoContent
	})
	dst := destination("app", d, worker.OnEvent, 0)
	dst.MaxInFlight = limit
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{dst}})
	b.opts.Workers, b.opts.Batch, b.opts.Idle = 4, 2, time.Hour
	var evs []inbox.Event
	for i := range events {
		evs = append(evs, event(fmt.Sprint("o", i), 1, "paid"))
	}
	ids := b.add(evs...)
	p := b.start()
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(ctx) }()
	p.Notify()
	select {
	case <-all:
	case <-time.After(time.Minute):
		t.Fatalf("deliveries stalled at %d of %d", len(d.Calls()), events)
	}
	cancel()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		b.wantStatus(id, inbox.StatusProcessed)
	}
	if most > limit {
		t.Fatalf("%d deliveries in flight at once, want at most %d", most, limit)
	}
}

// A Retry-After beyond the destination's retry_max_delay is capped: a
// huge value neither wraps into the past nor parks the delivery for years.
func TestRetryAfterIsCapped(t *testing.T) {
	t.Parallel()
	d := newDest(t, func(_ int, w http.ResponseWriter) int {
		w.Header().Set("Retry-After", "99999999999")
		return http.StatusServiceUnavailable
	})
	dst := destination("app", d, worker.OnEvent, 0)
	dst.RetryMaxDelay = 2 * time.Hour
	b := setup(t, worker.Source{Name: "shop", Destinations: []worker.Destination{dst}})
	b.start()
	ids := b.add(event("o1", 1, "paid"))
	b.once()
	if dl := b.delivery(ids[0], "app"); dl.NextAttemptAt.Sub(start) != 2*time.Hour {
		t.Errorf("next attempt at +%v, want the cap of 2h", dl.NextAttemptAt.Sub(start))
	}
}

// leaseOwners is a store that counts leases and records which workers
// leased events.
type leaseOwners struct {
	*sqlite.Store
	mu     sync.Mutex
	calls  int
	owners map[string]int
}

func (s *leaseOwners) Lease(ctx context.Context, owner string, limit int, d time.Duration) ([]inbox.Event, error) {
	evs, err := s.Store.Lease(ctx, owner, limit, d)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if len(evs) > 0 {
		s.owners[owner] += len(evs)
	}
	return evs, err
}

// read returns the leases so far, the events leased and by how many
// workers.
func (s *leaseOwners) read() (calls, events, owners int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.owners {
		events += n
	}
	return s.calls, events, len(s.owners)
}

// One Notify wakes one worker, but a backlog is not left to it alone: a
// worker that leases a full batch wakes the next.
func TestBacklogWakesEveryWorker(t *testing.T) {
	t.Parallel()
	b := setup(t, worker.Source{Name: "shop"})
	store := &leaseOwners{Store: b.store, owners: map[string]int{}}
	b.opts.Store, b.opts.Workers, b.opts.Batch, b.opts.Idle = store, 4, 2, time.Hour
	p := b.run()
	waitFor(t, 30*time.Second, func() bool { calls, _, _ := store.read(); return calls >= 4 })
	for i := range 40 {
		b.add(event(fmt.Sprint("o", i), 1, "created"))
	}
	p.Notify()
	waitFor(t, 30*time.Second, func() bool { _, n, _ := store.read(); return n == 40 })
	if _, _, owners := store.read(); owners < 2 {
		t.Fatalf("one worker leased the whole backlog of 20 batches: %v", store.owners)
	}
}

// A trickle of small commits is gathered into fewer batches: a worker
// woken after a short batch leases no sooner than Gather after the last
// such lease, so 100 events stored one at a time, each with its Notify,
// take a few leases rather than one each.
func TestTrickleIsGathered(t *testing.T) {
	t.Parallel()
	const gather, workers, events = 50 * time.Millisecond, 4, 100
	b := setup(t, worker.Source{Name: "shop"})
	store := &leaseOwners{Store: b.store, owners: map[string]int{}}
	b.opts.Store, b.opts.Workers, b.opts.Idle, b.opts.Gather = store, workers, time.Hour, gather
	p := b.run()
	waitFor(t, 30*time.Second, func() bool { calls, _, _ := store.read(); return calls >= workers })
	before, _, _ := store.read()
	began := time.Now()
	for i := range events {
		b.add(event(fmt.Sprint("t", i), 1, "created"))
		p.Notify()
		time.Sleep(2 * time.Millisecond)
	}
	waitFor(t, 30*time.Second, func() bool { _, n, _ := store.read(); return n == events })
	elapsed := time.Since(began)
	calls, _, _ := store.read()
	// The slots are gather apart, so at most elapsed/gather+1 of them
	// fall in the trickle; each worker may also lease late for a slot it
	// took before the trickle began.
	if leases, most := calls-before, int(elapsed/gather)+1+workers; leases > most {
		t.Fatalf("%d leases for %d events stored one at a time over %v, want at most %d (gathered %v apart)",
			leases, events, elapsed.Round(time.Millisecond), most, gather)
	}
}
