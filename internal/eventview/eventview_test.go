package eventview_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/eventview"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/inboxfill"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func TestNew(t *testing.T) {
	t.Parallel()
	base := inbox.Event{ID: 7, Scope: "acme/stripe/charge/updated/evt_1", Source: "stripe", Provider: "stripe",
		Tenant: "acme", EventID: "evt_1", ReceivedAt: t0, Status: inbox.StatusDelivering, Attempts: 1}
	with := func(f func(*inbox.Event)) inbox.Event {
		e := base
		f(&e)
		return e
	}
	for _, c := range []struct {
		name       string
		event      inbox.Event
		deliveries map[string]inbox.Delivery
		applied    inbox.ApplyOutcome
		transition string
		tie        bool
		attempts   int
		lastError  string
	}{
		{name: "not applied yet", event: with(func(e *inbox.Event) { e.Status = inbox.StatusReceived }),
			applied: inbox.ApplyNone},
		{name: "transition", event: with(func(e *inbox.Event) {
			e.Applied = &inbox.Applied{Outcome: inbox.ApplyApplied, From: "pending", To: "succeeded", Transition: true}
		}), applied: inbox.ApplyApplied, transition: "pending->succeeded"},
		{name: "new entity", event: with(func(e *inbox.Event) {
			e.Applied = &inbox.Applied{Outcome: inbox.ApplyApplied, To: "succeeded", Transition: true}
		}), applied: inbox.ApplyApplied, transition: "->succeeded"},
		{name: "unchanged", event: with(func(e *inbox.Event) {
			e.Applied = &inbox.Applied{Outcome: inbox.ApplyUnchanged, From: "paid", To: "paid"}
		}), applied: inbox.ApplyUnchanged},
		{name: "a tie that changed the state", event: with(func(e *inbox.Event) {
			e.Applied = &inbox.Applied{Outcome: inbox.ApplyApplied, From: "requires_payment_method", To: "succeeded", Transition: true, Tie: true}
		}), applied: inbox.ApplyApplied, transition: "requires_payment_method->succeeded", tie: true},
		{name: "a tie that left the state", event: with(func(e *inbox.Event) {
			e.Applied = &inbox.Applied{Outcome: inbox.ApplyUnchanged, From: "paid", To: "paid", Tie: true}
		}), applied: inbox.ApplyUnchanged, tie: true},
		{name: "stale", event: with(func(e *inbox.Event) {
			e.Applied = &inbox.Applied{Outcome: inbox.ApplyStale, From: "paid", To: "paid"}
		}), applied: inbox.ApplyStale},
		{name: "attempts of every destination, newest open error", event: base,
			deliveries: map[string]inbox.Delivery{
				"app":   {Destination: "app", Status: inbox.DeliveryDelivered, Attempts: 2, Error: "", At: t0.Add(3 * time.Second)},
				"audit": {Destination: "audit", Status: inbox.DeliveryFailed, Attempts: 3, Error: "410 Gone", At: t0.Add(time.Second)},
				"zeta":  {Destination: "zeta", Status: inbox.DeliveryPending, Attempts: 4, Error: "503", At: t0.Add(2 * time.Second)},
			},
			applied: inbox.ApplyNone, attempts: 9, lastError: "zeta: 503"},
		{name: "a delivered one's old error is no reason", event: base,
			deliveries: map[string]inbox.Delivery{
				"app": {Destination: "app", Status: inbox.DeliveryDelivered, Attempts: 2, Error: "timeout", At: t0},
			},
			applied: inbox.ApplyNone, attempts: 2},
		{name: "the event's own error first", event: with(func(e *inbox.Event) {
			e.Status, e.LastError = inbox.StatusDead, "audit: 410 Gone"
		}), deliveries: map[string]inbox.Delivery{
			"zeta": {Destination: "zeta", Status: inbox.DeliveryPending, Attempts: 1, Error: "503", At: t0},
		}, applied: inbox.ApplyNone, attempts: 1, lastError: "audit: 410 Gone"},
	} {
		v := eventview.New(c.event, c.deliveries)
		if v.Applied != c.applied || v.Transition != c.transition || v.Tie != c.tie || v.Attempts != c.attempts || v.LastError != c.lastError {
			t.Errorf("%s: applied %q, transition %q, tie %v, attempts %d, last error %q; want %q, %q, %v, %d, %q", c.name,
				v.Applied, v.Transition, v.Tie, v.Attempts, v.LastError, c.applied, c.transition, c.tie, c.attempts, c.lastError)
		}
		if v.ProcessingAttempts != 1 || v.ID != 7 || v.EventID != "evt_1" || v.Tenant != "acme" || !v.ReceivedAt.Equal(t0) {
			t.Errorf("%s: %+v", c.name, v)
		}
	}

	retry := eventview.New(with(func(e *inbox.Event) {
		e.Status, e.NextAttemptAt = inbox.StatusRetry, t0.Add(time.Minute)
	}), nil)
	if !retry.NextAttemptAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("retry: next attempt %v", retry.NextAttemptAt)
	}
	if done := eventview.New(with(func(e *inbox.Event) { e.NextAttemptAt = t0 }), nil); !done.NextAttemptAt.IsZero() {
		t.Errorf("delivering: next attempt %v, want none (only retry has one)", done.NextAttemptAt)
	}
}

func TestListJSONFields(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(eventview.New(inbox.Event{ID: 1, Status: inbox.StatusReceived}, nil))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "key", "scope", "status", "applied", "transition", "tie", "attempts", "processing_attempts", "last_error"} {
		if _, ok := m[k]; !ok {
			t.Errorf("%s lacks %q", data, k)
		}
	}
	for _, k := range []string{"headers", "payload", "deliveries", "next_attempt_at", "processed_at"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s has %q, which a list does not carry", data, k)
		}
	}
}

// bundle is an inbox on a clock the test moves.
type bundle struct {
	t     *testing.T
	store *sqlite.Store
	clock *dedupetest.Clock
}

func setup(t *testing.T) *bundle {
	t.Helper()
	clock := dedupetest.NewClock(t0)
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return &bundle{t: t, store: store, clock: clock}
}

// accept stores e and returns its id.
func (b *bundle) accept(e inbox.Event) int64 {
	b.t.Helper()
	k := dedupe.Key{Tenant: e.Tenant, Provider: e.Source, EventID: e.EventID}
	e.Hash, e.Scope = k.Hash(), k.Scope()
	out, err := b.store.Accept(b.t.Context(), []inbox.Item{{Window: time.Hour, Event: e}})
	if err != nil {
		b.t.Fatal(err)
	}
	return out[0].ID
}

// process leases every due event, applies them and finishes them
// processed for dests.
func (b *bundle) process(dests ...string) {
	b.t.Helper()
	ctx := b.t.Context()
	evs, err := b.store.Lease(ctx, "w", 100, time.Minute)
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.store.Apply(ctx, evs); err != nil {
		b.t.Fatal(err)
	}
	results := make([]inbox.Result, len(evs))
	for i, e := range evs {
		results[i] = inbox.Result{ID: e.ID, Status: inbox.StatusProcessed, Destinations: dests}
	}
	if err := b.store.Finish(ctx, "w", results); err != nil {
		b.t.Fatal(err)
	}
}

// attempt records one attempt of event id to source's dest that ends in
// st (a pending one is due again at once); the clock moves on a second.
func (b *bundle) attempt(source, dest string, id int64, st inbox.DeliveryStatus, code int, msg string) {
	b.t.Helper()
	defer b.clock.Advance(time.Second)
	now := b.clock.Now()
	inboxfill.Attempt(b.t, b.store, inbox.Lane{Source: source, Destination: dest},
		inbox.Attempt{EventID: id, At: now, Duration: 1500 * time.Microsecond, Code: code, Error: msg, Body: "body: " + msg}, st, now)
}

func TestLoad(t *testing.T) {
	t.Parallel()
	b := setup(t)
	older := b.accept(inbox.Event{Source: "stripe", Provider: "stripe", Tenant: "acme", EventID: "evt_1",
		EntityType: "charge", EntityID: "ch_1", EntityVersion: "1", EntityOrder: 1, EntityState: "pending",
		Payload: []byte(`{"id":"evt_1"}`), Headers: map[string]string{"Content-Type": "application/json"}})
	b.process()
	id := b.accept(inbox.Event{Source: "stripe", Provider: "stripe", Tenant: "acme", EventID: "evt_2", Type: "charge.succeeded",
		EntityType: "charge", EntityID: "ch_1", EntityVersion: "2", EntityOrder: 2, EntityState: "succeeded",
		Payload: []byte(`{"id":"evt_2"}`), Headers: map[string]string{"Content-Type": "application/json"}})
	b.process("zeta", "app")
	b.attempt("stripe", "zeta", id, inbox.DeliveryPending, 503, "unavailable")
	b.attempt("stripe", "app", id, inbox.DeliveryDelivered, 204, "")
	b.attempt("stripe", "zeta", id, inbox.DeliveryFailed, 0, "timeout")

	d, err := eventview.Load(t.Context(), b.store, id)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != inbox.StatusDead || d.LastError != "zeta: timeout" || d.Applied != inbox.ApplyApplied ||
		d.Transition != "pending->succeeded" || d.Attempts != 3 || d.ProcessingAttempts != 1 || d.Type != "charge.succeeded" {
		t.Errorf("event = %+v", d.Event)
	}
	if string(d.Payload) != `{"id":"evt_2"}` || d.PayloadText != "" || d.Headers["Content-Type"] != "application/json" {
		t.Errorf("payload %s / %q, headers %v", d.Payload, d.PayloadText, d.Headers)
	}
	if d.Entity == nil || d.Entity.State != "succeeded" || d.Entity.Version != "2" || d.Entity.WrittenBy != id || d.Entity.Type != "charge" {
		t.Errorf("entity = %+v", d.Entity)
	}
	if len(d.Deliveries) != 2 {
		t.Fatalf("deliveries = %+v, want app and zeta", d.Deliveries)
	}
	app, zeta := d.Deliveries[0], d.Deliveries[1]
	if app.Destination != "app" || app.Status != inbox.DeliveryDelivered || app.Attempts != 1 || app.Code != 204 ||
		len(app.Log) != 1 || app.Log[0].Code != 204 || app.Log[0].DurationMS != 1.5 || !app.Log[0].At.Equal(t0.Add(time.Second)) {
		t.Errorf("app = %+v", app)
	}
	if zeta.Destination != "zeta" || zeta.Status != inbox.DeliveryFailed || zeta.Attempts != 2 || zeta.Error != "timeout" ||
		len(zeta.Log) != 2 || zeta.Log[0].Code != 503 || zeta.Log[0].Body != "body: unavailable" || zeta.Log[1].Error != "timeout" {
		t.Errorf("zeta = %+v", zeta)
	}

	// The older event's own entity fields say pending; the view shows the
	// entity as it is now.
	old, err := eventview.Load(t.Context(), b.store, older)
	if err != nil {
		t.Fatal(err)
	}
	if old.EntityState != "pending" || old.Entity == nil || old.Entity.State != "succeeded" || old.Entity.WrittenBy != id {
		t.Errorf("older event: state %q, entity %+v", old.EntityState, old.Entity)
	}
	if old.Status != inbox.StatusProcessed || old.Deliveries == nil || len(old.Deliveries) != 0 {
		t.Errorf("older event: %s, deliveries %v, want processed with an empty list", old.Status, old.Deliveries)
	}

	// A replay starts the failed delivery over; its attempts stay in the
	// log.
	if _, err := b.store.Replay(t.Context(), inbox.ReplayFilter{IDs: []int64{id}}, nil); err != nil {
		t.Fatal(err)
	}
	d, err = eventview.Load(t.Context(), b.store, id)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != inbox.StatusReceived || d.Attempts != 1 || d.LastError != "" {
		t.Errorf("after replay: %+v", d.Event)
	}
	if len(d.Deliveries) != 2 || d.Deliveries[1].Status != "" || d.Deliveries[1].Attempts != 0 || len(d.Deliveries[1].Log) != 2 {
		t.Errorf("after replay: deliveries %+v, want zeta's log without a record", d.Deliveries)
	}

	if _, err := eventview.Load(t.Context(), b.store, 999); !errors.Is(err, inbox.ErrNotFound) {
		t.Errorf("Load(999) = %v, want ErrNotFound", err)
	}
}

func TestLoadNotJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.accept(inbox.Event{Source: "sf", Provider: "salesforce", EventID: "n1",
		Payload: []byte("<Notification><Id>n1</Id></Notification>")})
	d, err := eventview.Load(t.Context(), b.store, id)
	if err != nil {
		t.Fatal(err)
	}
	if d.Payload != nil || d.PayloadText != "<Notification><Id>n1</Id></Notification>" || d.Entity != nil {
		t.Errorf("payload %s, payload_text %q, entity %+v", d.Payload, d.PayloadText, d.Entity)
	}
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"headers":{}`) || !strings.Contains(string(data), `"deliveries":[]`) {
		t.Errorf("JSON %s: want empty headers and deliveries, not null", data)
	}
}

// A stored body that is not valid UTF-8, JSON-looking or not, is shown
// base64-encoded in payload_base64 and nowhere else; the JSON written (as
// the admin API writes it, and indented as `events show --json` does) is
// valid UTF-8 and gives the exact bytes back.
func TestLoadNotUTF8(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i, payload := range [][]byte{[]byte("{\"id\":\"evt_\xff\xfe\"}"), {0x1f, 0x8b, 0x08, 0x00, 0xc3, 0x28, 0x1b, '\n'}} {
		id := b.accept(inbox.Event{Source: "std", Provider: "standard", EventID: fmt.Sprint("bin", i), Payload: payload})
		d, err := eventview.Load(t.Context(), b.store, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Payload != nil || d.PayloadText != "" || !bytes.Equal(d.PayloadBase64, payload) {
			t.Errorf("%q: payload %q, payload_text %q, payload_base64 %q", payload, d.Payload, d.PayloadText, d.PayloadBase64)
		}
		compact, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var indented bytes.Buffer
		enc := json.NewEncoder(&indented)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
		for _, data := range [][]byte{compact, indented.Bytes()} {
			if !utf8.Valid(data) {
				t.Errorf("%q: JSON is not valid UTF-8: %q", payload, data)
			}
			var got map[string]any
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			if _, ok := got["payload"]; ok {
				t.Errorf("%q: payload present: %s", payload, data)
			}
			if _, ok := got["payload_text"]; ok {
				t.Errorf("%q: payload_text present: %s", payload, data)
			}
			raw, err := base64.StdEncoding.DecodeString(fmt.Sprint(got["payload_base64"]))
			if err != nil || !bytes.Equal(raw, payload) {
				t.Errorf("%q: payload_base64 %v decodes to %q, %v", payload, got["payload_base64"], raw, err)
			}
		}
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.accept(inbox.Event{Source: "shop", EventID: "1", Payload: []byte(`{}`)})
	c := b.accept(inbox.Event{Source: "shop", EventID: "2", Payload: []byte(`{}`)})
	b.process("app")
	b.attempt("shop", "app", c, inbox.DeliveryPending, 500, "boom")
	evs, err := b.store.List(t.Context(), inbox.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := eventview.List(t.Context(), b.store, evs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != c || got[0].Attempts != 1 || got[0].LastError != "app: boom" ||
		got[1].ID != a || got[1].Attempts != 0 || got[1].LastError != "" {
		t.Errorf("list = %+v", got)
	}
}
