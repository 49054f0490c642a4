package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxsqlite "github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/server"
	"github.com/hookgate/hookgate/internal/source"
	"github.com/hookgate/hookgate/verify"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	adminToken   = "admin-token-e2e-0123456789abcdef0123"
	stripeSecret = "whsec_stripe_e2e"
	appSecret    = "whsec_YXBwLXNpZ25pbmctc2VjcmV0LWZvci10ZXN0cw=="
)

// received is one delivery a destination got.
type received struct {
	path          string
	webhookID     string
	transition    string
	authorization string
	body          []byte
	at            time.Time
}

// destination is a test application: it verifies the Standard Webhooks
// signature of every delivery, records it, and answers with what its
// behave function returns (204 by default). Like a careful application it
// deduplicates on webhook-id: effects counts distinct ids.
type destination struct {
	t        *testing.T
	srv      *httptest.Server
	verifier *verify.Standard
	mu       sync.Mutex
	got      []received
	effects  map[string]int
	behave   atomic.Pointer[func(n int) (status int, delay time.Duration)]
}

func newDestination(t *testing.T) *destination {
	t.Helper()
	v, err := verify.NewStandard(appSecret)
	if err != nil {
		t.Fatal(err)
	}
	d := &destination{t: t, verifier: v, effects: map[string]int{}}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *destination) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := d.verifier.Verify(r, body); err != nil {
		d.t.Errorf("delivery does not verify as Standard Webhooks: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	d.mu.Lock()
	n := len(d.got)
	id := r.Header.Get("webhook-id")
	d.got = append(d.got, received{path: r.URL.Path, webhookID: id, transition: r.Header.Get("X-Hookgate-Transition"),
		authorization: r.Header.Get("Authorization"), body: body, at: time.Now()})
	d.effects[id]++
	d.mu.Unlock()
	status, delay := http.StatusNoContent, time.Duration(0)
	if f := d.behave.Load(); f != nil {
		status, delay = (*f)(n)
	}
	switch {
	case delay == untilGivenUp:
		<-r.Context().Done() // the application answers only after hookgate gave up
	case delay > 0:
		time.Sleep(delay) // the application is slow, on purpose
	}
	w.WriteHeader(status)
}

// untilGivenUp, as a behaviour's delay, holds the answer until the
// gateway's attempt has ended (its timeout passed and it hung up).
const untilGivenUp time.Duration = -1

func (d *destination) setBehaviour(f func(n int) (int, time.Duration)) { d.behave.Store(&f) }

// deliveries returns what the destination at path got ("" for all).
func (d *destination) deliveries(path ...string) []received {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []received
	for _, r := range d.got {
		if len(path) == 0 || r.path == "/hooks/"+path[0] {
			out = append(out, r)
		}
	}
	return out
}

type gateway struct {
	url   string
	store *inboxsqlite.Store
	src   *source.Source
}

type destCfg struct {
	name, on    string
	timeout     time.Duration
	maxAttempts int
}

// start runs a gateway in process with one Stripe source delivering to
// dest, and its workers, until the test ends.
func start(t *testing.T, dest *destination, dests ...destCfg) *gateway {
	t.Helper()
	return startWith(t, server.Options{}, nil, dest, dests...)
}

// startWith is start with options (the store and backoff are set here) and
// a change to the configuration.
func startWith(t *testing.T, opts server.Options, configure func(*config.Config), dest *destination, dests ...destCfg) *gateway {
	t.Helper()
	dir := t.TempDir()
	schema, err := filepath.Abs("testdata/charge-event.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(dests) == 0 {
		dests = []destCfg{{name: "app", on: "event"}}
	}
	var ds []config.Destination
	for _, d := range dests {
		dc := config.Destination{Name: d.name, URL: dest.srv.URL + "/hooks/" + d.name, Secret: config.NewSecret(appSecret),
			On: d.on, Timeout: config.Duration(d.timeout), MaxAttempts: d.maxAttempts}
		if dc.Timeout == 0 {
			dc.Timeout = config.Duration(5 * time.Second)
		}
		if dc.MaxAttempts == 0 {
			dc.MaxAttempts = 10
		}
		ds = append(ds, dc.WithDefaults())
	}
	cfg := config.Default()
	cfg.Workers = 2
	cfg.Admin.Token = config.NewSecret(adminToken)
	cfg.Metrics.Public = true
	cfg.Sources = []config.Source{{
		Name: "stripe", Provider: "stripe", Secret: config.NewSecret(stripeSecret),
		Schema: schema, Destinations: ds, Window: config.Duration(time.Hour),
	}}
	if configure != nil {
		configure(&cfg)
	}
	store, err := inboxsqlite.Open(filepath.Join(dir, "hookgate.db"), inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Store, opts.BackoffBase, opts.BackoffMax = store, 20*time.Millisecond, 200*time.Millisecond
	opts.Rand = func() float64 { return 1 }
	gw, err := server.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Run(ctx) }()
	t.Cleanup(func() {
		srv.Close()
		gw.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("workers: %v", err)
		}
		store.Close()
	})
	return &gateway{url: srv.URL, store: store, src: gw.Sources()[0]}
}

func charge(id, typ, ch, status string, created int64, refunded bool) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":%q,"created":%d,"data":{"object":{"id":%q,"object":"charge","amount":2000,"status":%q,"refunded":%t}}}`,
		id, typ, created, ch, status, refunded)
}

func (g *gateway) send(t *testing.T, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.url+"/in/stripe", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.src.Signer().Sign(req, body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

func (g *gateway) statuses(t *testing.T) map[inbox.Status]int {
	t.Helper()
	st, err := g.store.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Sources["stripe"].ByStatus
}

func (g *gateway) waitSettled(t *testing.T, processed, dead int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d processed and %d dead", processed, dead), func() bool {
		s := g.statuses(t)
		return s[inbox.StatusProcessed] == processed && s[inbox.StatusDead] == dead
	})
}

func (g *gateway) entity(t *testing.T, id string) inbox.Entity {
	t.Helper()
	e, err := g.store.Entity(context.Background(), "", "charge", id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Same event twice: one entity, one delivery.
func TestSameEventOneDelivery(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	g := start(t, dest)
	body := charge("evt_1", "charge.succeeded", "ch_1", "succeeded", 100, false)
	if g.send(t, body) != http.StatusAccepted || g.send(t, body) != http.StatusOK {
		t.Fatal("want 202 then 200")
	}
	g.waitSettled(t, 1, 0)
	if got := dest.deliveries(); len(got) != 1 || !bytes.Equal(got[0].body, body) {
		t.Fatalf("deliveries: %d, want 1 with the event's payload", len(got))
	}
	if e := g.entity(t, "ch_1"); e.State != "succeeded" {
		t.Fatalf("entity state %q", e.State)
	}
}

// Created, updated, refunded: one entity ending refunded, three deliveries
// to the on:event destination, and only the transitions to on:transition.
func TestLifecycleTransitions(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	g := start(t, dest, destCfg{name: "app", on: "event"}, destCfg{name: "ledger", on: "transition"})
	g.send(t, charge("evt_c", "charge.created", "ch_2", "pending", 100, false))
	g.waitSettled(t, 1, 0)
	g.send(t, charge("evt_u", "charge.updated", "ch_2", "pending", 200, false))
	g.waitSettled(t, 2, 0)
	g.send(t, charge("evt_r", "charge.refunded", "ch_2", "succeeded", 300, true))
	g.waitSettled(t, 3, 0)
	if e := g.entity(t, "ch_2"); e.State != "refunded" {
		t.Fatalf("entity state %q, want refunded", e.State)
	}
	if app := dest.deliveries("app"); len(app) != 3 {
		t.Fatalf("app (on: event) got %d deliveries, want 3", len(app))
	}
	var transitions []string
	for _, d := range dest.deliveries("ledger") {
		transitions = append(transitions, d.transition)
	}
	if fmt.Sprint(transitions) != "[->pending pending->refunded]" {
		t.Fatalf("ledger (on: transition) got %q, want the two transitions", transitions)
	}
}

// Out of order: the newer event first, then the older: the older is stale,
// the entity keeps the newer state and no transition fires for it.
func TestOutOfOrderIsStale(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	g := start(t, dest, destCfg{name: "app", on: "event"}, destCfg{name: "ledger", on: "transition"})
	g.send(t, charge("evt_new", "charge.refunded", "ch_3", "succeeded", 300, true))
	g.waitSettled(t, 1, 0)
	g.send(t, charge("evt_old", "charge.succeeded", "ch_3", "succeeded", 100, false))
	g.waitSettled(t, 2, 0)
	if e := g.entity(t, "ch_3"); e.State != "refunded" || e.Order != 300 {
		t.Fatalf("entity %+v, want the newer state refunded at version 300", e)
	}
	if n := len(dest.deliveries("ledger")); n != 1 {
		t.Fatalf("ledger got %d transitions, want 1 (the stale event fires none)", n)
	}
	events, err := g.store.List(context.Background(), inbox.Filter{Source: "stripe"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.EventID == "evt_old" && (e.Applied == nil || e.Applied.Outcome != inbox.ApplyStale) {
			t.Fatalf("older event applied as %+v, want stale", e.Applied)
		}
	}
}

// One invalid event among 200 dies alone, with its reason; the rest are
// processed.
func TestInvalidEventDiesAlone(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	g := start(t, dest)
	for i := range 200 {
		body := charge(fmt.Sprintf("evt_%d", i), "charge.succeeded", fmt.Sprintf("ch_%d", i), "succeeded", 100, false)
		if i == 123 {
			body = bytes.Replace(body, []byte(`"amount":2000`), []byte(`"amount":-5`), 1)
		}
		if st := g.send(t, body); st != http.StatusAccepted {
			t.Fatalf("event %d: %d", i, st)
		}
	}
	g.waitSettled(t, 199, 1)
	dead, err := g.store.List(context.Background(), inbox.Filter{Status: inbox.StatusDead})
	if err != nil || len(dead) != 1 {
		t.Fatalf("dead: %v %v", dead, err)
	}
	if dead[0].EventID != "evt_123" || !bytes.Contains([]byte(dead[0].LastError), []byte("amount")) {
		t.Fatalf("dead event %s with %q, want evt_123 naming the amount", dead[0].EventID, dead[0].LastError)
	}
	if n := len(dest.deliveries()); n != 199 {
		t.Fatalf("deliveries: %d, want 199", n)
	}
}

// The destination does the work but answers after hookgate's timeout: the
// retry carries the same webhook-id, so the application sees one effect.
// The first attempt is answered only once hookgate hung up, so it timed
// out however loaded the machine; a retry that times out too is one more
// delivery under the same id.
func TestTimeoutAfterCommitRetriesSameID(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	dest.setBehaviour(func(n int) (int, time.Duration) {
		if n == 0 {
			return http.StatusNoContent, untilGivenUp
		}
		return http.StatusNoContent, 0
	})
	g := start(t, dest, destCfg{name: "app", on: "event", timeout: time.Second})
	g.send(t, charge("evt_slow", "charge.succeeded", "ch_4", "succeeded", 100, false))
	g.waitSettled(t, 1, 0)
	got := dest.deliveries()
	if len(got) < 2 {
		t.Fatalf("%d deliveries, want the timed-out one and its retry", len(got))
	}
	for _, r := range got[1:] {
		if r.webhookID != got[0].webhookID {
			t.Fatalf("deliveries with ids %v, want one webhook-id", got)
		}
	}
	dest.mu.Lock()
	effects := len(dest.effects)
	dest.mu.Unlock()
	if effects != 1 {
		t.Fatalf("the application saw %d effects, want 1", effects)
	}
}

// A destination down for a while: retries with growing delays, then one
// delivery when it recovers.
func TestDestinationRecovers(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	dest.setBehaviour(func(n int) (int, time.Duration) {
		if n < 4 {
			return http.StatusServiceUnavailable, 0
		}
		return http.StatusOK, 0
	})
	g := start(t, dest)
	g.send(t, charge("evt_down", "charge.succeeded", "ch_5", "succeeded", 100, false))
	g.waitSettled(t, 1, 0)
	got := dest.deliveries()
	if len(got) != 5 {
		t.Fatalf("attempts: %d, want 4 failures and 1 success", len(got))
	}
	// Backoff with full jitter drawn at its maximum: 20ms, 40ms, 80ms, 160ms.
	for i := 1; i < len(got); i++ {
		gap := got[i].at.Sub(got[i-1].at)
		if want := 20 * time.Millisecond << (i - 1); gap < want {
			t.Errorf("gap before attempt %d: %v, want at least %v", i+1, gap, want)
		}
	}
}

// Down beyond max_attempts: dead; replayed once it is back: delivered.
func TestDeadThenReplayDelivers(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	var down atomic.Bool
	down.Store(true)
	dest.setBehaviour(func(int) (int, time.Duration) {
		if down.Load() {
			return http.StatusBadGateway, 0
		}
		return http.StatusOK, 0
	})
	g := start(t, dest, destCfg{name: "app", on: "event", maxAttempts: 3})
	g.send(t, charge("evt_dead", "charge.succeeded", "ch_6", "succeeded", 100, false))
	g.waitSettled(t, 0, 1)
	if n := len(dest.deliveries()); n != 3 {
		t.Fatalf("attempts before dead: %d, want 3", n)
	}
	down.Store(false)
	n, err := g.store.Replay(context.Background(), inbox.ReplayFilter{Dead: true}, nil)
	if err != nil || n != 1 {
		t.Fatalf("replay: %d %v", n, err)
	}
	g.waitSettled(t, 1, 0)
	if n := len(dest.deliveries()); n != 4 {
		t.Fatalf("deliveries after replay: %d, want 3 failed + 1 delivered", n)
	}
}

// Replay of processed events: same end state, no new deliveries; with
// redelivery, the same webhook-ids again.
func TestReplayIsSafe(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	g := start(t, dest, destCfg{name: "app", on: "event"}, destCfg{name: "ledger", on: "transition"})
	g.send(t, charge("evt_a", "charge.succeeded", "ch_7", "succeeded", 100, false))
	g.send(t, charge("evt_b", "charge.refunded", "ch_7", "succeeded", 200, true))
	g.waitSettled(t, 2, 0)
	before := dest.deliveries()
	if len(before) != 4 {
		t.Fatalf("deliveries: %d, want 2 to app + 2 to ledger", len(before))
	}
	if n, err := g.store.Replay(context.Background(), inbox.ReplayFilter{Source: "stripe"}, nil); err != nil || n != 2 {
		t.Fatalf("replay: %d %v", n, err)
	}
	g.waitSettled(t, 2, 0)
	if n := len(dest.deliveries()); n != 4 {
		t.Fatalf("replay without redelivery delivered %d more", n-4)
	}
	if e := g.entity(t, "ch_7"); e.State != "refunded" {
		t.Fatalf("entity after replay: %q, want refunded", e.State)
	}
	if _, err := g.store.Replay(context.Background(), inbox.ReplayFilter{Source: "stripe", Redeliver: true}, nil); err != nil {
		t.Fatal(err)
	}
	g.waitSettled(t, 2, 0)
	waitFor(t, "redeliveries", func() bool { return len(dest.deliveries()) == 8 })
	ids := map[string]int{}
	for _, d := range dest.deliveries() {
		ids[d.path+" "+d.webhookID]++
	}
	for k, n := range ids {
		if n != 2 {
			t.Errorf("%s delivered %d times, want twice (once, then redelivered with the same webhook-id)", k, n)
		}
	}
}

// The webhook-id of a delivery is the event's key, readable from the inbox.
func TestWebhookIDIsEventKey(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	g := start(t, dest)
	g.send(t, charge("evt_k", "charge.succeeded", "ch_8", "succeeded", 100, false))
	g.waitSettled(t, 1, 0)
	events, err := g.store.List(context.Background(), inbox.Filter{})
	if err != nil || len(events) != 1 {
		t.Fatal(events, err)
	}
	if got := dest.deliveries()[0].webhookID; got != events[0].Hash.String() {
		t.Fatalf("webhook-id %q, want the event key %s", got, events[0].Hash)
	}
}

// An intake-only server stores events and leaves them for a server that
// processes: over its whole run, from Run to its return, it leases none
// (each event still has no attempt) and delivers none. Its workers, if it
// had any, would be woken by each commit.
func TestIntakeOnlyLeavesEventsWaiting(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	store, err := inboxsqlite.Open(filepath.Join(t.TempDir(), "hookgate.db"), inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := config.Default()
	cfg.Sources = []config.Source{{
		Name: "stripe", Provider: "stripe", Secret: config.NewSecret(stripeSecret), Window: config.Duration(time.Hour),
		Destinations: []config.Destination{config.Destination{Name: "app", URL: dest.srv.URL + "/hooks/app",
			Secret: config.NewSecret(appSecret), On: "event", Timeout: config.Duration(5 * time.Second)}.WithDefaults()},
	}}
	gw, err := server.New(cfg, server.Options{Store: store, IntakeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Run(ctx) }()
	g := &gateway{url: srv.URL, store: store, src: gw.Sources()[0]}
	for i := range 5 {
		if st := g.send(t, charge(fmt.Sprintf("evt_io%d", i), "charge.succeeded", "ch_io", "succeeded", int64(i), false)); st != http.StatusAccepted {
			t.Fatalf("event %d: %d", i, st)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	srv.Close()
	gw.Close()
	if n := len(dest.deliveries()); n != 0 {
		t.Fatalf("an intake-only server delivered %d events", n)
	}
	events, err := store.List(context.Background(), inbox.Filter{})
	if err != nil || len(events) != 5 {
		t.Fatalf("stored %d events, %v; want 5", len(events), err)
	}
	for _, e := range events {
		if e.Status != inbox.StatusReceived || e.Attempts != 0 {
			t.Errorf("event %s: %s after %d attempts, want received and never leased", e.EventID, e.Status, e.Attempts)
		}
	}
}

// The admin API and the metrics are served beside intake.
func TestAdminAndMetrics(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	g := start(t, dest)
	g.send(t, charge("evt_adm", "charge.succeeded", "ch_adm", "succeeded", 100, false))
	g.waitSettled(t, 1, 0)
	get := func(path, token string) (int, string) {
		t.Helper()
		return getPath(t, g.url+path, token)
	}
	if st, _ := get("/api/stats", ""); st != http.StatusUnauthorized {
		t.Fatalf("admin API without a token: %d, want 401", st)
	}
	if st, _ := get("/api/stats", "wrong"); st != http.StatusUnauthorized {
		t.Fatalf("admin API with a wrong token: %d, want 401", st)
	}
	if st, body := get("/api/events", adminToken); st != http.StatusOK || !strings.Contains(body, "evt_adm") {
		t.Fatalf("GET /api/events: %d %s", st, body)
	}
	st, body := get("/metrics", "")
	for _, want := range []string{
		`hookgate_events_received_total{outcome="accepted",source="stripe"} 1`,
		`hookgate_deliveries_total{destination="app",outcome="delivered",source="stripe"} 1`,
		`hookgate_inbox_pending 0`,
	} {
		if st != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// startSweeping starts a gateway that sweeps every 20ms, keeps processed
// events for retention and keys for 50ms.
func startSweeping(t *testing.T, retention time.Duration, dest *destination) *gateway {
	t.Helper()
	return startWith(t, server.Options{}, func(c *config.Config) {
		c.SweepEvery = config.Duration(20 * time.Millisecond)
		c.Retention = config.Duration(retention)
		c.Sources[0].Window = config.Duration(50 * time.Millisecond)
	}, dest)
}

// keys counts the stored dedupe keys.
func (g *gateway) keys(t *testing.T) int {
	t.Helper()
	var n int
	if err := g.store.DB().QueryRow("SELECT count(*) FROM dedupe_keys").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The sweep inside the server removes processed events past the retention
// and expired keys, on its period.
func TestPeriodicSweep(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	g := startSweeping(t, time.Millisecond, dest)
	body := charge("evt_sw", "charge.succeeded", "ch_sw", "succeeded", 100, false)
	if st := g.send(t, body); st != http.StatusAccepted {
		t.Fatalf("first delivery: %d", st)
	}
	waitFor(t, "the processed event to be swept", func() bool {
		st, err := g.store.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return len(dest.deliveries()) == 1 && st.Sources["stripe"].ByStatus[inbox.StatusProcessed] == 0
	})
	waitFor(t, "the expired key to be swept", func() bool { return g.keys(t) == 0 })
}

// G6: the sweep removes a key when its window ends but keeps the processed
// event for the whole retention.
func TestPeriodicSweepKeepsRetention(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	g := startSweeping(t, time.Hour, dest)
	body := charge("evt_keep", "charge.succeeded", "ch_keep", "succeeded", 100, false)
	if st := g.send(t, body); st != http.StatusAccepted {
		t.Fatalf("first delivery: %d", st)
	}
	processed := func() int {
		st, err := g.store.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return st.Sources["stripe"].ByStatus[inbox.StatusProcessed]
	}
	waitFor(t, "the event to be processed", func() bool { return processed() == 1 })
	waitFor(t, "the expired key to be swept", func() bool { return g.keys(t) == 0 })
	if n := processed(); n != 1 {
		t.Fatalf("processed events after a sweep within the retention: %d, want 1", n)
	}
}

// A destination's static headers go with every delivery (the config
// resolves env: and file: values before).
func TestDestinationHeaders(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	g := startWith(t, server.Options{}, func(c *config.Config) {
		c.Sources[0].Destinations[0].Headers = map[string]config.HeaderValue{
			"Authorization": config.NewHeaderValue("Bearer s3cret"),
		}
	}, dest)
	if st := g.send(t, charge("evt_h", "charge.succeeded", "ch_h", "succeeded", 100, false)); st != http.StatusAccepted {
		t.Fatalf("delivery: %d", st)
	}
	waitFor(t, "the delivery", func() bool { return len(dest.deliveries()) == 1 })
	if got := dest.deliveries()[0].authorization; got != "Bearer s3cret" {
		t.Fatalf("Authorization = %q, want the configured value", got)
	}
}

// A destination's types match the Stripe event's type as intake read it.
func TestDestinationTypes(t *testing.T) {
	t.Parallel()
	dest := newDestination(t)
	g := startWith(t, server.Options{}, func(c *config.Config) {
		c.Sources[0].Destinations[1].Types = []string{"charge.refund*"}
	}, dest, destCfg{name: "app", on: "event"}, destCfg{name: "refunds", on: "event"})
	g.send(t, charge("evt_t1", "charge.succeeded", "ch_t", "succeeded", 100, false))
	g.send(t, charge("evt_t2", "charge.refunded", "ch_t", "succeeded", 200, true))
	g.waitSettled(t, 2, 0)
	if n := len(dest.deliveries("app")); n != 2 {
		t.Errorf("app got %d deliveries, want 2", n)
	}
	refunds := dest.deliveries("refunds")
	if len(refunds) != 1 || !bytes.Contains(refunds[0].body, []byte(`"evt_t2"`)) {
		t.Errorf("refunds got %d deliveries, want only evt_t2", len(refunds))
	}
}

// server.New refuses a configuration it cannot run, naming the field,
// instead of panicking later (a zero sweep period panicked in the
// sweep's ticker).
func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	store, err := inboxsqlite.Open(filepath.Join(t.TempDir(), "hookgate.db"), inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for _, tc := range []struct {
		name, field string
		configure   func(*config.Config)
	}{
		{"zero sweep period", "sweep_every", func(c *config.Config) { c.SweepEvery = 0 }},
		{"zero store timeout", "dedupe.store_timeout", func(c *config.Config) { c.Dedupe.StoreTimeout = 0 }},
		{"store timeout within the spool's try", "dedupe.store_timeout", func(c *config.Config) {
			c.Dedupe.OnStoreError, c.Dedupe.Spool = config.OnStoreErrorSpool, filepath.Join(t.TempDir(), "spool.db")
			c.Dedupe.StoreTimeout = config.Duration(time.Second)
		}},
	} {
		cfg := config.Default()
		tc.configure(&cfg)
		gw, err := server.New(cfg, server.Options{Store: store})
		if err == nil {
			gw.Close()
			t.Errorf("%s: New succeeded, want an error", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want it to name %s", tc.name, err, tc.field)
		}
	}
}
