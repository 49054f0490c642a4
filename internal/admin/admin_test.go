package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/admin"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/inboxfill"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
)

const token = "s3cret-admin-token-0123456789abcdef"

// bundle is what a test works with: the API over a real SQLite inbox whose
// clock the test moves.
type bundle struct {
	t     *testing.T
	api   http.Handler
	store *sqlite.Store
	clock *dedupetest.Clock
	log   *bytes.Buffer
}

// setup returns the API over an empty inbox whose clock starts an hour ago.
func setup(t *testing.T) *bundle {
	t.Helper()
	clock := dedupetest.NewClock(time.Now().Add(-time.Hour).Truncate(time.Second))
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var log bytes.Buffer
	h, err := admin.New(admin.Options{Store: store, Token: token, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{t: t, api: h, store: store, clock: clock, log: &log}
}

// accept stores one event per id of source (tenant acme unless the id
// names one after a slash: "3/globex") and returns their inbox ids.
func (b *bundle) accept(source string, ids ...string) []int64 {
	b.t.Helper()
	items := make([]inbox.Item, len(ids))
	for i, id := range ids {
		id, tenant, ok := strings.Cut(id, "/")
		if !ok {
			tenant = "acme"
		}
		k := dedupe.Key{Tenant: tenant, Provider: source, ObjectType: "charge", Action: "updated", EventID: id}
		items[i] = inbox.Item{Window: time.Hour, Event: inbox.Event{
			Hash: k.Hash(), Scope: k.Scope(), Source: source, Provider: "stripe", Tenant: tenant, EventID: id,
			EntityType: "charge", EntityID: "ch_" + id, EntityVersion: "1", EntityOrder: 1, EntityState: "succeeded",
			Payload: []byte(`{"id":"` + id + `"}`), Headers: map[string]string{"Content-Type": "application/json"},
		}}
	}
	out, err := b.store.Accept(b.t.Context(), items)
	if err != nil {
		b.t.Fatal(err)
	}
	got := make([]int64, 0, len(out))
	for _, o := range out {
		if o.Status == dedupe.New {
			got = append(got, o.ID)
		}
	}
	return got
}

// kill leases every due event and finishes the given ones as dead; the
// clock moves on by a millisecond, past the others' lease.
func (b *bundle) kill(reason string, ids ...int64) {
	b.t.Helper()
	defer b.clock.Advance(time.Millisecond)
	if _, err := b.store.Lease(b.t.Context(), "test", 1000, time.Nanosecond); err != nil {
		b.t.Fatal(err)
	}
	results := make([]inbox.Result, len(ids))
	for i, id := range ids {
		results[i] = inbox.Result{ID: id, Status: inbox.StatusDead, Error: reason}
	}
	if err := b.store.Finish(b.t.Context(), "test", results); err != nil {
		b.t.Fatal(err)
	}
}

// route finishes event id processed for dests (inboxfill.Route); the
// clock moves on by a millisecond, past the other events' lease.
func (b *bundle) route(id int64, dests ...string) {
	b.t.Helper()
	defer b.clock.Advance(time.Millisecond)
	inboxfill.Route(b.t, b.store, id, dests...)
}

// attempt records one attempt on event id to source's dest, 2 ms long,
// that ends in st (a pending one is due again at once); the clock moves on
// by a second.
func (b *bundle) attempt(source, dest string, id int64, st inbox.DeliveryStatus, code int, msg string) {
	b.t.Helper()
	defer b.clock.Advance(time.Second)
	now := b.clock.Now()
	inboxfill.Attempt(b.t, b.store, inbox.Lane{Source: source, Destination: dest},
		inbox.Attempt{EventID: id, At: now, Duration: 2 * time.Millisecond, Code: code, Error: msg, Body: "answer: " + msg}, st, now)
}

// do sends a request with the token and returns the status and body.
func (b *bundle) do(method, target, body string) (int, []byte) {
	b.t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	b.api.ServeHTTP(rec, req)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		b.t.Errorf("%s %s: Content-Type %q", method, target, ct)
	}
	return rec.Code, rec.Body.Bytes()
}

// get sends a GET, wants code, and decodes the answer into v.
func (b *bundle) get(target string, code int, v any) {
	b.t.Helper()
	b.want(http.MethodGet, target, "", code, v)
}

// want sends a request, wants code, and decodes the answer into v.
func (b *bundle) want(method, target, body string, code int, v any) {
	b.t.Helper()
	got, data := b.do(method, target, body)
	if got != code {
		b.t.Fatalf("%s %s = %d %s, want %d", method, target, got, data, code)
	}
	if err := json.Unmarshal(data, v); err != nil {
		b.t.Fatalf("%s %s: %v in %s", method, target, err, data)
	}
}

// wantError sends a request and wants code with {"error": ...} containing msg.
func (b *bundle) wantError(method, target, body string, code int, msg string) {
	b.t.Helper()
	var e struct{ Error string }
	b.want(method, target, body, code, &e)
	if !strings.Contains(e.Error, msg) {
		b.t.Errorf("%s %s: error %q does not contain %q", method, target, e.Error, msg)
	}
}

// eventView is what a test reads of eventview's JSON.
type eventView struct {
	ID                 int64             `json:"id"`
	Key                string            `json:"key"`
	Source             string            `json:"source"`
	Tenant             string            `json:"tenant"`
	EventID            string            `json:"event_id"`
	Status             string            `json:"status"`
	ReceivedAt         time.Time         `json:"received_at"`
	EntityID           string            `json:"entity_id"`
	Applied            string            `json:"applied"`
	Transition         string            `json:"transition"`
	Attempts           int               `json:"attempts"`
	ProcessingAttempts int               `json:"processing_attempts"`
	LastError          string            `json:"last_error"`
	Headers            map[string]string `json:"headers"`
	Payload            json.RawMessage   `json:"payload"`
	PayloadText        string            `json:"payload_text"`
	PayloadBase64      []byte            `json:"payload_base64"`
	Entity             *struct {
		State     string `json:"state"`
		WrittenBy int64  `json:"written_by"`
	} `json:"entity"`
	Deliveries []struct {
		Destination string `json:"destination"`
		Status      string `json:"status"`
		Attempts    int    `json:"attempts"`
		Code        int    `json:"code"`
		Error       string `json:"error"`
		Log         []struct {
			At         time.Time `json:"at"`
			DurationMS float64   `json:"duration_ms"`
			Code       int       `json:"code"`
			Error      string    `json:"error"`
			Body       string    `json:"body"`
		} `json:"log"`
	} `json:"deliveries"`
}

type listView struct {
	Events []eventView `json:"events"`
	Next   int64       `json:"next"`
}

func ids(l listView) []int64 {
	out := make([]int64, len(l.Events))
	for i, e := range l.Events {
		out[i] = e.ID
	}
	return out
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	if _, err := admin.New(admin.Options{Store: setup(t).store}); !errors.Is(err, admin.ErrNoToken) {
		t.Errorf("New without a token = %v, want ErrNoToken", err)
	}
	if _, err := admin.New(admin.Options{Token: token}); !errors.Is(err, admin.ErrNoStore) {
		t.Errorf("New without a store = %v, want ErrNoStore", err)
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i, c := range []struct {
		name, header, challenge string
	}{
		{"none", "", `Bearer realm="hookgate"`},
		{"basic", "Basic dXNlcjpwYXNz", `Bearer realm="hookgate"`},
		{"bearer without token", "Bearer", `Bearer realm="hookgate"`},
		{"wrong token", "Bearer wrong", `Bearer realm="hookgate", error="invalid_token"`},
		{"prefix of the token", "Bearer " + token[:5], `Bearer realm="hookgate", error="invalid_token"`},
		{"token and more", "Bearer " + token + "x", `Bearer realm="hookgate", error="invalid_token"`},
	} {
		for _, target := range []string{"/api/stats", "/api/nowhere"} {
			req := httptest.NewRequest(http.MethodGet, target, nil)
			// Each case from its own address: the wrong tokens of one
			// address are limited (TestWrongTokensAreLimited).
			req.RemoteAddr = "192.0.2." + strconv.Itoa(i+1) + ":1234"
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			rec := httptest.NewRecorder()
			b.api.ServeHTTP(rec, req)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("%s %s: status %d, want 401", c.name, target, rec.Code)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != c.challenge {
				t.Errorf("%s %s: WWW-Authenticate %q, want %q", c.name, target, got, c.challenge)
			}
			if !strings.Contains(rec.Body.String(), `"error"`) {
				t.Errorf("%s %s: body %q is not a JSON error", c.name, target, rec.Body)
			}
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/api/stats", nil)
	req.Header.Set("Authorization", "bearer "+token)
	rec := httptest.NewRecorder()
	b.api.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("lower-case scheme: status %d, want 200", rec.Code)
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.wantError(http.MethodGet, "/api/nowhere", "", http.StatusNotFound, "no such route")
	b.wantError(http.MethodPost, "/api/stats", "", http.StatusMethodNotAllowed, "use GET")
	b.wantError(http.MethodGet, "/api/replay", "", http.StatusMethodNotAllowed, "use POST")
	req := httptest.NewRequest(http.MethodDelete, "/api/events/1", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	b.api.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != http.MethodGet {
		t.Errorf("DELETE /api/events/1: %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}

func TestListEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := b.clock.Now()
	stripe := b.accept("stripe", "1", "2", "3/globex")
	b.clock.Advance(time.Minute)
	shop := b.accept("shop", "4", "5")
	b.kill("boom", stripe[1])

	var all listView
	b.get("/api/events", http.StatusOK, &all)
	if want := []int64{shop[1], shop[0], stripe[2], stripe[1], stripe[0]}; !slices.Equal(ids(all), want) {
		t.Errorf("events = %v, want newest first %v", ids(all), want)
	}
	if all.Next != 0 {
		t.Errorf("next = %d on the only page", all.Next)
	}
	e := all.Events[len(all.Events)-1]
	if e.Source != "stripe" || e.Tenant != "acme" || e.EventID != "1" || e.Status != "received" || e.EntityID != "ch_1" ||
		len(e.Key) != 2*dedupe.HashSize || !e.ReceivedAt.Equal(start) || e.Applied != "none" || e.Transition != "" {
		t.Errorf("oldest event = %+v", e)
	}
	if e.Payload != nil || e.Headers != nil || e.Deliveries != nil {
		t.Errorf("list carries payload, headers or deliveries: %+v", e)
	}

	for _, c := range []struct {
		query string
		want  []int64
	}{
		{"source=shop", []int64{shop[1], shop[0]}},
		{"tenant=globex", []int64{stripe[2]}},
		{"source=stripe&tenant=acme", []int64{stripe[1], stripe[0]}},
		{"status=dead", []int64{stripe[1]}},
		{"status=delivering", nil},
		{"status=received&source=stripe", []int64{stripe[2], stripe[0]}},
		{"source=none", nil},
	} {
		var l listView
		b.get("/api/events?"+c.query, http.StatusOK, &l)
		if !slices.Equal(ids(l), c.want) {
			t.Errorf("%s: %v, want %v", c.query, ids(l), c.want)
		}
		if l.Events == nil {
			t.Errorf("%s: events is null, want a list", c.query)
		}
	}

	// Pages of two, following next, give every event once, in order.
	var paged []int64
	target := "/api/events?limit=2"
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("paging does not end")
		}
		var l listView
		b.get(target, http.StatusOK, &l)
		paged = append(paged, ids(l)...)
		if l.Next == 0 {
			break
		}
		target = "/api/events?limit=2&before=" + strconv.FormatInt(l.Next, 10)
	}
	if !slices.Equal(paged, ids(all)) {
		t.Errorf("paged = %v, want %v", paged, ids(all))
	}

	for query, msg := range map[string]string{
		"status=done":  `status "done"`,
		"limit=0":      `limit "0": want 1 to 1000`,
		"limit=1001":   `limit "1001"`,
		"limit=ten":    `limit "ten"`,
		"before=-3":    `before "-3"`,
		"before=later": `before "later"`,
	} {
		b.wantError(http.MethodGet, "/api/events?"+query, "", http.StatusBadRequest, msg)
	}
}

func TestShowEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := b.clock.Now()
	id := b.accept("stripe", "1")[0]
	b.route(id, "zeta", "app")
	b.attempt("stripe", "zeta", id, inbox.DeliveryPending, 503, "unavailable")
	b.attempt("stripe", "app", id, inbox.DeliveryDelivered, 204, "")

	var e eventView
	b.get("/api/events/"+strconv.FormatInt(id, 10), http.StatusOK, &e)
	if string(e.Payload) != `{"id":"1"}` || e.PayloadText != "" {
		t.Errorf("payload = %s / %q", e.Payload, e.PayloadText)
	}
	if e.Headers["Content-Type"] != "application/json" {
		t.Errorf("headers = %v", e.Headers)
	}
	if e.Status != "delivering" || e.Applied != "applied" || e.Transition != "->succeeded" ||
		e.Attempts != 2 || e.ProcessingAttempts != 1 || e.LastError != "zeta: unavailable" {
		t.Errorf("event = %+v", e)
	}
	if e.Entity == nil || e.Entity.State != "succeeded" || e.Entity.WrittenBy != id {
		t.Errorf("entity = %+v", e.Entity)
	}
	if len(e.Deliveries) != 2 {
		t.Fatalf("deliveries = %+v, want app and zeta", e.Deliveries)
	}
	app, zeta := e.Deliveries[0], e.Deliveries[1]
	if app.Destination != "app" || app.Status != "delivered" || app.Attempts != 1 || app.Code != 204 || len(app.Log) != 1 {
		t.Errorf("app = %+v", app)
	}
	if zeta.Destination != "zeta" || zeta.Status != "pending" || zeta.Code != 503 || zeta.Error != "unavailable" || len(zeta.Log) != 1 {
		t.Fatalf("zeta = %+v", zeta)
	}
	if l := zeta.Log[0]; !l.At.Equal(start.Add(time.Millisecond)) || l.DurationMS != 2 || l.Code != 503 ||
		l.Error != "unavailable" || l.Body != "answer: unavailable" {
		t.Errorf("zeta's attempt = %+v", l)
	}

	b.wantError(http.MethodGet, "/api/events/999", "", http.StatusNotFound, "not found")
	b.wantError(http.MethodGet, "/api/events/abc", "", http.StatusBadRequest, `event id "abc"`)
	b.wantError(http.MethodGet, "/api/events/0", "", http.StatusBadRequest, `event id "0"`)
}

func TestShowEventNotJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k := dedupe.Key{Provider: "sf", EventID: "n1"}
	out, err := b.store.Accept(t.Context(), []inbox.Item{{Window: time.Hour, Event: inbox.Event{
		Hash: k.Hash(), Scope: k.Scope(), Source: "sf", Provider: "salesforce", EventID: "n1",
		Payload: []byte("<Notification><Id>n1</Id></Notification>"),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	var e eventView
	b.get("/api/events/"+strconv.FormatInt(out[0].ID, 10), http.StatusOK, &e)
	if e.Payload != nil || e.PayloadText != "<Notification><Id>n1</Id></Notification>" {
		t.Errorf("payload = %s, payload_text = %q", e.Payload, e.PayloadText)
	}
	if e.Deliveries == nil || len(e.Deliveries) != 0 {
		t.Errorf("deliveries = %v, want an empty list", e.Deliveries)
	}
}

// A payload that is not valid UTF-8 is answered base64-encoded in
// payload_base64, and the answer is valid UTF-8.
func TestShowEventNotUTF8(t *testing.T) {
	t.Parallel()
	b := setup(t)
	payload := []byte("{\"id\":\"\xff\x1b[31m\"}")
	k := dedupe.Key{Provider: "std", EventID: "bin"}
	out, err := b.store.Accept(t.Context(), []inbox.Item{{Window: time.Hour, Event: inbox.Event{
		Hash: k.Hash(), Scope: k.Scope(), Source: "std", Provider: "standard", EventID: "bin", Payload: payload,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	code, raw := b.do(http.MethodGet, "/api/events/"+strconv.FormatInt(out[0].ID, 10), "")
	if code != http.StatusOK || !utf8.Valid(raw) {
		t.Fatalf("%d %q, want 200 and valid UTF-8", code, raw)
	}
	var e eventView
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	if e.Payload != nil || e.PayloadText != "" || !bytes.Equal(e.PayloadBase64, payload) {
		t.Errorf("payload = %s, payload_text = %q, payload_base64 = %q; want only payload_base64, the stored bytes",
			e.Payload, e.PayloadText, e.PayloadBase64)
	}
}

func TestDead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.accept("stripe", "1", "2", "3")
	b.kill("destination app: 410 Gone", id[0], id[2])
	var l listView
	b.get("/api/dead", http.StatusOK, &l)
	if !slices.Equal(ids(l), []int64{id[2], id[0]}) {
		t.Fatalf("dead = %v, want %v", ids(l), []int64{id[2], id[0]})
	}
	for _, e := range l.Events {
		if e.Status != "dead" || e.LastError != "destination app: 410 Gone" {
			t.Errorf("dead event = %+v", e)
		}
	}
	b.get("/api/dead?source=shop", http.StatusOK, &l)
	if len(l.Events) != 0 {
		t.Errorf("dead of shop = %v", ids(l))
	}
	b.get("/api/dead?limit=1", http.StatusOK, &l)
	if !slices.Equal(ids(l), []int64{id[2]}) || l.Next != id[2] {
		t.Errorf("dead?limit=1 = %v next %d", ids(l), l.Next)
	}
	b.wantError(http.MethodGet, "/api/dead?status=received", "", http.StatusBadRequest, "status: not a filter here")
}

func (b *bundle) status(id int64) inbox.Status {
	b.t.Helper()
	e, err := b.store.Get(b.t.Context(), id)
	if err != nil {
		b.t.Fatal(err)
	}
	return e.Status
}

func TestReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	old := b.accept("stripe", "1", "2")
	b.clock.Advance(50 * time.Minute)
	recent := b.accept("stripe", "3", "4/globex")
	b.kill("gone", old[0], recent[0])

	var r struct{ Replayed int }
	b.want(http.MethodPost, "/api/replay", `{"dead": true}`, http.StatusOK, &r)
	if r.Replayed != 2 || b.status(old[0]) != inbox.StatusReceived || b.status(recent[0]) != inbox.StatusReceived {
		t.Errorf("dead replay: replayed %d, statuses %s %s", r.Replayed, b.status(old[0]), b.status(recent[0]))
	}
	// The clock started an hour ago: "since 30m" finds only the two
	// accepted 10 minutes ago.
	b.want(http.MethodPost, "/api/replay", `{"since": "30m"}`, http.StatusOK, &r)
	if r.Replayed != 2 {
		t.Errorf("since 30m replayed %d, want 2", r.Replayed)
	}
	b.want(http.MethodPost, "/api/replay", `{"tenant": "globex"}`, http.StatusOK, &r)
	if r.Replayed != 1 {
		t.Errorf("tenant globex replayed %d, want 1", r.Replayed)
	}
	b.want(http.MethodPost, "/api/replay", `{"ids": [`+strconv.FormatInt(old[1], 10)+`]}`, http.StatusOK, &r)
	if r.Replayed != 1 {
		t.Errorf("ids replayed %d, want 1", r.Replayed)
	}
	// Days, as the command line's --since takes them: the four events
	// came within the last 7 days, none within the last 0d0h5m.
	b.want(http.MethodPost, "/api/replay", `{"since": "7d"}`, http.StatusOK, &r)
	if r.Replayed != 4 {
		t.Errorf("since 7d replayed %d, want 4", r.Replayed)
	}
	b.want(http.MethodPost, "/api/replay", `{"since": "0d5m"}`, http.StatusOK, &r)
	if r.Replayed != 0 {
		t.Errorf("since 0d5m replayed %d, want 0", r.Replayed)
	}
	b.want(http.MethodPost, "/api/replay", `{"all": true}`, http.StatusOK, &r)
	if r.Replayed != 4 {
		t.Errorf("all replayed %d, want 4", r.Replayed)
	}

	for body, msg := range map[string]string{
		``:                        "want a JSON object",
		`{}`:                      `no filter`,
		`{"redeliver": true}`:     `no filter`,
		`{"dead": "yes"}`:         "cannot unmarshal",
		`{"dead": true, "x": 1}`:  `unknown field "x"`,
		`{"since": "1w"}`:         `since "1w"`,
		`{"since": "-1h"}`:        `since "-1h"`,
		`{"since": "-2d"}`:        `since "-2d"`,
		`{"ids": [0]}`:            "ids: 0",
		`{"dead": true} {}`:       "one JSON object",
		`[1, 2]`:                  "cannot unmarshal",
		`{"source": "stripe"`:     "body:",
		`{"source": "stripe"}xyz`: "one JSON object",
	} {
		b.wantError(http.MethodPost, "/api/replay", body, http.StatusBadRequest, msg)
	}
	big := `{"ids": [` + strings.Repeat("1, ", admin.MaxBody/3) + `1]}`
	b.wantError(http.MethodPost, "/api/replay", big, http.StatusRequestEntityTooLarge, "larger than")
}

func TestReplayRedeliver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.accept("stripe", "1")[0]
	b.route(id, "app", "ledger")
	b.attempt("stripe", "app", id, inbox.DeliveryDelivered, 200, "")
	b.attempt("stripe", "ledger", id, inbox.DeliveryDelivered, 200, "")
	delivered := func() []string {
		ds, err := b.store.Deliveries(t.Context(), []int64{id})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for name, d := range ds[id] {
			if d.Status == inbox.DeliveryDelivered {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		return names
	}
	var r struct{ Replayed int }
	b.want(http.MethodPost, "/api/replay", `{"source": "stripe"}`, http.StatusOK, &r)
	if got := delivered(); r.Replayed != 1 || !slices.Equal(got, []string{"app", "ledger"}) {
		t.Errorf("replay: replayed %d, delivered to %v; want 1, both kept", r.Replayed, got)
	}
	b.want(http.MethodPost, "/api/replay", `{"source": "stripe", "redeliver": true, "destination": "ledger"}`, http.StatusOK, &r)
	if got := delivered(); r.Replayed != 1 || !slices.Equal(got, []string{"app"}) {
		t.Errorf("redeliver to ledger: replayed %d, delivered to %v; want 1, app kept", r.Replayed, got)
	}
	b.want(http.MethodPost, "/api/replay", `{"source": "stripe", "redeliver": true}`, http.StatusOK, &r)
	if got := delivered(); r.Replayed != 1 || len(got) != 0 {
		t.Errorf("redeliver: replayed %d, delivered to %v; want 1, none kept", r.Replayed, got)
	}
	b.wantError(http.MethodPost, "/api/replay", `{"source": "stripe", "destination": "ledger"}`,
		http.StatusBadRequest, `add "redeliver": true`)
}

func TestStats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := b.clock.Now()
	id := b.accept("stripe", "1", "2", "3")
	b.accept("stripe", "1", "2") // duplicates
	b.accept("shop", "9")
	b.kill("gone", id[0])

	var s admin.Stats
	b.get("/api/stats", http.StatusOK, &s)
	st := s.Sources["stripe"]
	if st.Accepted != 3 || st.Duplicates != 2 || st.DedupeHitRate != 0.4 {
		t.Errorf("stripe = %+v, want 3 accepted, 2 duplicates, hit rate 0.4", st)
	}
	if st.ByStatus[inbox.StatusReceived] != 2 || st.ByStatus[inbox.StatusDead] != 1 {
		t.Errorf("stripe by status = %v", st.ByStatus)
	}
	if _, ok := st.ByStatus[inbox.StatusProcessed]; !ok {
		t.Errorf("stripe by status lacks processed: %v", st.ByStatus)
	}
	if sh := s.Sources["shop"]; sh.Accepted != 1 || sh.DedupeHitRate != 0 {
		t.Errorf("shop = %+v", sh)
	}
	if s.Pending != 3 || !s.OldestPending.Equal(start) || s.OldestPendingSeconds < 3500 {
		t.Errorf("pending %d, oldest %v (%v s); want 3 received an hour ago", s.Pending, s.OldestPending, s.OldestPendingSeconds)
	}
	if s.Lanes == nil || len(s.Lanes) != 0 {
		t.Errorf("lanes = %v, want an empty list", s.Lanes)
	}

	// Event 2 waits for app, which is paused after failing.
	b.route(id[1], "app")
	b.attempt("stripe", "app", id[1], inbox.DeliveryPending, 503, "unavailable")
	until := b.clock.Now().Add(time.Minute)
	err := b.store.SetLaneState(t.Context(), inbox.LaneState{Lane: inbox.Lane{Source: "stripe", Destination: "app"},
		State: inbox.LanePaused, Failures: 5, Until: until, LastError: "503 unavailable", Changed: b.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	b.get("/api/stats", http.StatusOK, &s)
	if len(s.Lanes) != 1 {
		t.Fatalf("lanes = %+v, want stripe's app", s.Lanes)
	}
	if l := s.Lanes[0]; l.Source != "stripe" || l.Destination != "app" || l.State != "paused" || l.Failures != 5 ||
		!l.Until.Equal(until) || l.LastError != "503 unavailable" || !l.Changed.Equal(until.Add(-time.Minute)) || l.Pending != 1 {
		t.Errorf("lane = %+v", l)
	}
	if s.Sources["stripe"].ByStatus[inbox.StatusDelivering] != 1 || s.Pending != 3 {
		t.Errorf("stripe by status = %v, pending %d; want 1 delivering, 3 pending", s.Sources["stripe"].ByStatus, s.Pending)
	}
}

func TestNewStats(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	got := admin.NewStats(inbox.Stats{Sources: map[string]inbox.SourceStats{
		"a": {ByStatus: map[inbox.Status]int{inbox.StatusProcessed: 5}, Accepted: 3, Duplicates: 1},
		"b": {},
	}}, now)
	if a := got.Sources["a"]; a.DedupeHitRate != 0.25 || len(a.ByStatus) != 5 || a.ByStatus[inbox.StatusProcessed] != 5 {
		t.Errorf("a = %+v", a)
	}
	if b := got.Sources["b"]; b.DedupeHitRate != 0 || len(b.ByStatus) != 5 {
		t.Errorf("b = %+v", b)
	}
	if got.OldestPendingSeconds != 0 || !got.OldestPending.IsZero() {
		t.Errorf("nothing pending: %+v", got)
	}
	got = admin.NewStats(inbox.Stats{Pending: 1, OldestPending: now.Add(-90 * time.Second)}, now)
	if got.OldestPendingSeconds != 90 {
		t.Errorf("oldest pending seconds = %v, want 90", got.OldestPendingSeconds)
	}
	// Until means something only while a lane is paused.
	got = admin.NewStats(inbox.Stats{Lanes: []inbox.LaneState{
		{Lane: inbox.Lane{Source: "a", Destination: "app"}, State: inbox.LanePaused, Failures: 5, Until: now, Pending: 2},
		{Lane: inbox.Lane{Source: "a", Destination: "ledger"}, State: inbox.LaneHealthy, Until: now.Add(-time.Hour)},
	}}, now)
	if len(got.Lanes) != 2 || !got.Lanes[0].Until.Equal(now) || got.Lanes[0].Failures != 5 || got.Lanes[0].Pending != 2 ||
		!got.Lanes[1].Until.IsZero() || got.Lanes[1].State != "healthy" {
		t.Errorf("lanes = %+v", got.Lanes)
	}
	data, err := json.Marshal(admin.NewStats(inbox.Stats{}, now))
	if err != nil || string(data) != `{"sources":{},"pending":0,"oldest_pending_seconds":0,"lanes":[]}` {
		t.Errorf("empty stats JSON = %s, %v", data, err)
	}
}

// failing is a store whose reads fail.
type failing struct{ inbox.Store }

var errDown = errors.New("inbox: database is locked")

func (failing) Stats(context.Context) (inbox.Stats, error)                { return inbox.Stats{}, errDown }
func (failing) List(context.Context, inbox.Filter) ([]inbox.Event, error) { return nil, errDown }

func TestStoreError(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	h, err := admin.New(admin.Options{Store: failing{}, Token: token, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, api: h, log: &log}
	b.wantError(http.MethodGet, "/api/stats", "", http.StatusInternalServerError, "database is locked")
	b.wantError(http.MethodGet, "/api/dead", "", http.StatusInternalServerError, "database is locked")
	if !strings.Contains(log.String(), "path=/api/stats") || !strings.Contains(log.String(), "database is locked") {
		t.Errorf("log = %q, want the failed request and its error", log.String())
	}
}
