package console_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/console"
	"github.com/hookgate/hookgate/internal/inbox"
)

// twoDestinations is a config of one source delivering to app and audit.
var twoDestinations = []config.Source{{Name: "stripe", Provider: "stripe",
	Destinations: []config.Destination{
		{Name: "app", URL: "https://user:pw@app.example/hooks?key=secret", On: config.OnEvent},
		{Name: "audit", URL: "http://audit.example/", On: config.OnAll}}}}

// deliver leases the events and records one attempt each to app: ended
// decides its status, code and error.
func (b *bundle) deliver(ids []int64, dest string, st inbox.DeliveryStatus, code int, msg, body string) {
	b.t.Helper()
	ctx := b.t.Context()
	if _, err := b.store.Lease(ctx, "w", 1000, time.Minute); err != nil {
		b.t.Fatal(err)
	}
	results := make([]inbox.Result, len(ids))
	for i, id := range ids {
		results[i] = inbox.Result{ID: id, Status: inbox.StatusProcessed, Destinations: []string{dest}}
	}
	if err := b.store.Finish(ctx, "w", results); err != nil {
		b.t.Fatal(err)
	}
	lane := inbox.Lane{Source: "stripe", Destination: dest}
	if _, err := b.store.Dispatch(ctx, "d", lane, nil, len(ids), time.Minute); err != nil {
		b.t.Fatal(err)
	}
	var done []inbox.Done
	for _, id := range ids {
		done = append(done, inbox.Done{Status: st, Attempt: inbox.Attempt{EventID: id, Destination: dest, At: b.clock.Now(),
			Duration: 42 * time.Millisecond, Code: code, Error: msg, Body: body}})
	}
	if _, err := b.store.Dispatch(ctx, "d", lane, done, 0, time.Minute); err != nil {
		b.t.Fatal(err)
	}
}

// held reports whether the store holds the lane stripe/dest.
func (b *bundle) held(dest string) bool {
	b.t.Helper()
	st, err := b.store.Stats(b.t.Context())
	if err != nil {
		b.t.Fatal(err)
	}
	for _, l := range st.Lanes {
		if l.Source == "stripe" && l.Destination == dest {
			return l.Held
		}
	}
	return false
}

// A destination's page shows its lane's state and circuit, pending
// deliveries and newest attempts with their answers; Pause holds it in
// the store and Resume releases it, each only with the session's CSRF
// token; Redeliver its failed events replays, once confirmed, the dead
// events that destination failed and no other.
func TestDestinationPage(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{Sources: twoDestinations})
	failed := b.accept("stripe", "", jsonID, "evt_refused")
	b.deliver(failed, "app", inbox.DeliveryFailed, 422, "refused: 422", "<b>order not found</b>")
	b.clock.Advance(time.Second)
	other := b.accept("stripe", "", jsonID, "evt_audit")
	b.deliver(other, "audit", inbox.DeliveryFailed, 410, "gone", "")
	b.clock.Advance(time.Second)
	pending := b.accept("stripe", "", jsonID, "evt_pending")
	b.deliver(pending, "app", inbox.DeliveryPending, 503, "unavailable", "try later")
	until := b.clock.Now().Add(5 * time.Minute)
	if err := b.store.SetLaneState(t.Context(), inbox.LaneState{Lane: inbox.Lane{Source: "stripe", Destination: "app"},
		State: inbox.LanePaused, Failures: 5, Until: until, LastError: "unavailable", Changed: b.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	csrf := b.signIn()

	if !strings.Contains(b.get("/ui/"), `<a href="/ui/destinations/app">app</a>`) {
		t.Error("the overview does not link the destination's page")
	}
	body := b.get("/ui/destinations/app")
	for _, want := range []string{
		`<td class="mono">https://app.example</td>`, `<span class="badge paused">paused</span>`,
		`<td>5</td><td>1</td>`, "open: probed again at", `datetime="` + until.UTC().Format(time.RFC3339) + `"`,
		`<a href="/ui/events/` + itoa(pending[0]) + `">`, "503", "try later",
		"422", "refused: 422", "&lt;b&gt;order not found&lt;/b&gt;", "42.0 ms", "Pause delivery",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("destination page lacks %s", want)
		}
	}
	if strings.Contains(body, "secret") || strings.Contains(body, "pw@") {
		t.Error("the destination page shows its URL's credentials")
	}
	if i, j := strings.Index(body, "try later"), strings.Index(body, "order not found"); i < 0 || j < 0 || i > j {
		t.Error("the newest attempt is not first")
	}
	if strings.Contains(body, "gone") {
		t.Error("the page shows another destination's attempt")
	}
	b.wantCode(http.MethodGet, "/ui/destinations/nowhere", nil, http.StatusNotFound)

	b.wantCode(http.MethodPost, "/ui/destinations/app/hold", url.Values{"held": {"1"}}, http.StatusForbidden)
	b.wantCode(http.MethodPost, "/ui/destinations/app/hold", url.Values{"held": {"1"}, "csrf": {"stale"}}, http.StatusForbidden)
	if b.held("app") {
		t.Fatal("a POST without the CSRF token held the destination")
	}
	b.wantCode(http.MethodPost, "/ui/destinations/app/hold", url.Values{"held": {"1"}, "csrf": {csrf}}, http.StatusSeeOther)
	if !b.held("app") || b.held("audit") {
		t.Fatalf("after Pause: app held %v, audit held %v; want app only", b.held("app"), b.held("audit"))
	}
	body = b.get("/ui/destinations/app")
	for _, want := range []string{"paused on every node", "Resume delivery", `<span class="badge held">held</span>`} {
		if !strings.Contains(body, want) {
			t.Errorf("page after Pause lacks %s", want)
		}
	}
	if strings.Contains(b.get("/ui/destinations/app"), "paused on every node") {
		t.Error("the flash shows twice")
	}
	b.wantCode(http.MethodPost, "/ui/destinations/app/hold", url.Values{"held": {"0"}, "csrf": {csrf}}, http.StatusSeeOther)
	if b.held("app") {
		t.Error("Resume did not release the destination")
	}

	form := url.Values{"csrf": {csrf}, "dead": {"1"}, "failed_to": {"app"}}
	if code, body := b.do(http.MethodPost, "/ui/replay", form); code != http.StatusOK || !strings.Contains(body, "This replays <b>1</b> event(s)") ||
		!strings.Contains(body, "that app failed") {
		t.Fatalf("redeliver failed events = %d: %.2000s", code, body)
	}
	form.Set("confirm", "1")
	if code, body := b.do(http.MethodPost, "/ui/replay", form); code != http.StatusOK || !strings.Contains(body, "Replayed 1 event(s)") {
		t.Fatalf("confirmed = %d: %.2000s", code, body)
	}
	if st := b.status(failed[0]); st != inbox.StatusReceived {
		t.Errorf("the event app failed is %s, want received", st)
	}
	if st := b.status(other[0]); st != inbox.StatusDead {
		t.Errorf("the event audit failed is %s, want still dead", st)
	}
}

// The charts read the store's counts, so a console started again (a
// restart) draws what the first one drew, and what the tables hold.
func TestChartsOutliveARestart(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{Sources: twoDestinations})
	ids := b.accept("stripe", "", jsonID, "a", "b", "c")
	b.accept("stripe", "", jsonID, "a")
	b.kill("refused", ids[0])
	b.signIn()
	legend := func(page string) string {
		i := strings.Index(page, "<b>Last 24 hours</b>")
		if i < 0 {
			t.Fatalf("no day chart:\n%.3000s", page)
		}
		return page[i : i+strings.Index(page[i:], "</figcaption>")]
	}
	first := legend(b.get("/ui/"))
	for _, want := range []string{"received 3", "duplicates 1", "processed 0", "dead 1"} {
		if !strings.Contains(first, want) {
			t.Errorf("day chart %q lacks %s", first, want)
		}
	}

	again, err := console.New(b.opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(again)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	restarted := &bundle{t: t, store: b.store, clock: b.clock, srv: srv, opts: b.opts,
		client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	restarted.signIn()
	if got := legend(restarted.get("/ui/")); got != first {
		t.Errorf("after a restart the day chart says %q, before %q", got, first)
	}
}

// Times do not wrap, durations read as the config writes them, versions
// that are times show as times, the tenant column shows only when an
// event of the page has a tenant, and an attempt count says "since the
// last replay" only after one.
func TestFormatting(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{Sources: twoDestinations})
	ids := b.accept("stripe", "", jsonID, "evt_1")
	b.clock.Advance(36 * time.Hour)
	b.signIn()
	if body := b.get("/ui/"); !strings.Contains(body, "<b>1d12h</b> oldest pending") {
		t.Errorf("overview lacks the oldest pending age as 1d12h:\n%.2000s", body)
	}
	if body := b.get("/ui/events"); strings.Contains(body, "<th>tenant</th>") || !strings.Contains(body, "<time datetime=") {
		t.Errorf("a page of events without tenants has a tenant column, or its times no <time>:\n%.3000s", body)
	}
	b.accept("stripe", "acme", jsonID, "evt_2")
	if body := b.get("/ui/events"); !strings.Contains(body, "<th>tenant</th>") || !strings.Contains(body, "<td>acme</td>") {
		t.Error("a page with a tenant has no tenant column")
	}

	b.deliver(ids, "app", inbox.DeliveryFailed, 400, "refused", "")
	body := b.get("/ui/events/" + itoa(ids[0]))
	if !strings.Contains(body, "1 attempt(s)") || strings.Contains(body, "since the event was last replayed") {
		t.Errorf("before a replay the delivery says:\n%.4000s", body)
	}
	if _, err := b.store.Replay(t.Context(), inbox.ReplayFilter{IDs: ids}, nil); err != nil {
		t.Fatal(err)
	}
	b.deliver(ids, "app", inbox.DeliveryFailed, 400, "refused again", "")
	if body := b.get("/ui/events/" + itoa(ids[0])); !strings.Contains(body, "1 attempt(s) since the event was last replayed, 2 in the log") {
		t.Errorf("after a replay the delivery says:\n%.4000s", body)
	}

	for v, want := range map[string]string{
		"1712000000":           `<time datetime="2024-04-01T19:33:20Z" title="1712000000">2024-04-01 19:33:20Z</time>`,
		"1712000000123":        `title="1712000000123">2024-04-01 19:33:20Z</time>`,
		"2026-03-01T10:00:00Z": `title="2026-03-01T10:00:00Z">2026-03-01 10:00:00Z</time>`,
		"7":                    "version 7, state",
	} {
		id := b.acceptVersion("evt_v"+v, v)
		if body := b.get("/ui/events/" + itoa(id)); !strings.Contains(body, want) {
			t.Errorf("version %s: the event page lacks %s", v, want)
		}
	}
}

// acceptVersion stores an event about a charge at version v and returns
// its inbox id.
func (b *bundle) acceptVersion(id, v string) int64 {
	b.t.Helper()
	k := dedupe.Key{Provider: "stripe", ObjectType: "charge", EventID: id}
	out, err := b.store.Accept(b.t.Context(), []inbox.Item{{Window: time.Hour, Event: inbox.Event{
		Hash: k.Hash(), Scope: k.Scope(), Source: "stripe", Provider: "stripe", EventID: id,
		EntityType: "charge", EntityID: "ch_" + id, EntityVersion: v, EntityOrder: 1, EntityState: "paid",
		Payload: []byte(jsonID(id))}}})
	if err != nil {
		b.t.Fatal(err)
	}
	return out[0].ID
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

// An ordered destination's page lists the keys it holds behind a
// delivery that failed for good, each with its event; Skip, only with the
// session's CSRF token, lets the key move on.
func TestDestinationPageSkipsABlockedKey(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{Sources: twoDestinations})
	ctx := t.Context()
	ids := b.accept("stripe", "", jsonID, "evt_k1", "evt_k2")
	if _, err := b.store.Lease(ctx, "w", 10, time.Minute); err != nil {
		t.Fatal(err)
	}
	results := make([]inbox.Result, len(ids))
	for i, id := range ids {
		results[i] = inbox.Result{ID: id, Status: inbox.StatusProcessed, Destinations: []string{"app"},
			OrderKeys: map[string]string{"app": "cus_<1>"}}
	}
	if err := b.store.Finish(ctx, "w", results); err != nil {
		t.Fatal(err)
	}
	lane := inbox.Lane{Source: "stripe", Destination: "app"}
	if _, err := b.store.DispatchOrdered(ctx, "d", lane, nil, 10, time.Minute); err != nil {
		t.Fatal(err)
	}
	failed := inbox.Done{Status: inbox.DeliveryFailed, Block: true,
		Attempt: inbox.Attempt{EventID: ids[0], Destination: "app", At: b.clock.Now(), Code: 400, Error: "refused"}}
	if _, err := b.store.DispatchOrdered(ctx, "d", lane, []inbox.Done{failed}, 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	csrf := b.signIn()
	body := b.get("/ui/destinations/app")
	for _, want := range []string{"<h2>Blocked keys</h2>", `<td class="mono">cus_&lt;1&gt;</td>`,
		`<a href="/ui/events/` + itoa(ids[0]) + `">`, `action="/ui/destinations/app/skip"`} {
		if !strings.Contains(body, want) {
			t.Errorf("destination page lacks %s", want)
		}
	}
	skip := url.Values{"source": {"stripe"}, "key": {"cus_<1>"}}
	b.wantCode(http.MethodPost, "/ui/destinations/app/skip", skip, http.StatusForbidden)
	skip.Set("csrf", csrf)
	b.wantCode(http.MethodPost, "/ui/destinations/app/skip", skip, http.StatusSeeOther)
	if body := b.get("/ui/destinations/app"); !strings.Contains(body, "Key cus_&lt;1&gt; of stripe skipped") || strings.Contains(body, "<h2>Blocked keys</h2>") {
		t.Errorf("after Skip the page says:\n%.3000s", body)
	}
	out, err := b.store.DispatchOrdered(ctx, "d", lane, nil, 10, time.Minute)
	if err != nil || len(out.Tasks) != 1 || out.Tasks[0].Event.ID != ids[1] || out.Tasks[0].Delivery.Skipped != 1 {
		t.Fatalf("after Skip: %+v, %v; want the key's next delivery, with one skipped", out.Tasks, err)
	}
}
