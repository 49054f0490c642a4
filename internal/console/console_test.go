package console_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/console"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const token = "console-admin-token-0123456789abcdef"

// bundle is a console over a real SQLite inbox whose clock the test moves,
// served on a real socket, and a browser-like client with a cookie jar.
type bundle struct {
	t      testing.TB
	store  *sqlite.Store
	clock  *dedupetest.Clock
	srv    *httptest.Server
	client *http.Client
	opts   console.Options
}

// setup serves a console with opts over an empty inbox (Store, Token and
// Now are filled in).
func setup(t testing.TB, opts console.Options) *bundle {
	t.Helper()
	clock := dedupetest.NewClock(time.Now().Truncate(time.Minute))
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	opts.Store, opts.Token, opts.Now = store, token, clock.Now
	h, err := console.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		store.Close()
	})
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &bundle{t: t, store: store, clock: clock, srv: srv, client: client, opts: opts}
}

// accept stores one event of source per id with the given payload and
// returns their inbox ids.
func (b *bundle) accept(source, tenant string, payload func(id string) string, ids ...string) []int64 {
	b.t.Helper()
	items := make([]inbox.Item, len(ids))
	for i, id := range ids {
		k := dedupe.Key{Tenant: tenant, Provider: source, ObjectType: "charge", Action: "updated", EventID: id}
		items[i] = inbox.Item{Window: time.Hour, Event: inbox.Event{
			Hash: k.Hash(), Scope: k.Scope(), Source: source, Provider: "stripe", Tenant: tenant, EventID: id,
			Type: "charge.updated", EntityType: "charge", EntityID: "ch_" + id, EntityVersion: "1", EntityOrder: 1,
			EntityState: "succeeded", Payload: []byte(payload(id)), Headers: map[string]string{"Content-Type": "application/json"},
		}}
	}
	out, err := b.store.Accept(b.t.Context(), items)
	if err != nil {
		b.t.Fatal(err)
	}
	got := make([]int64, len(out))
	for i, o := range out {
		got[i] = o.ID
	}
	return got
}

func jsonID(id string) string { return `{"id":"` + id + `"}` }

// kill leases every due event and finishes the given ones as dead.
func (b *bundle) kill(reason string, ids ...int64) {
	b.t.Helper()
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
	b.clock.Advance(time.Millisecond)
}

// do sends a request with the client's cookies and returns the status and
// body.
func (b *bundle) do(method, path string, form url.Values) (int, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.srv.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp.StatusCode, string(data)
}

// wantCode sends a request and wants code.
func (b *bundle) wantCode(method, path string, form url.Values, code int) {
	b.t.Helper()
	if got, body := b.do(method, path, form); got != code {
		b.t.Errorf("%s %s %v = %d, want %d: %.300s", method, path, form, got, code, body)
	}
}

// get wants 200 for a GET of path and returns the page.
func (b *bundle) get(path string) string {
	b.t.Helper()
	code, body := b.do(http.MethodGet, path, nil)
	if code != http.StatusOK {
		b.t.Fatalf("GET %s = %d: %s", path, code, body)
	}
	return body
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of a page's forms.
func (b *bundle) csrf(page string) string {
	b.t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no csrf field in %s", page)
	}
	return m[1]
}

// signIn signs the client in with the admin token and returns the CSRF
// token of the session's forms.
func (b *bundle) signIn() string {
	b.t.Helper()
	code, body := b.do(http.MethodPost, "/ui/login", url.Values{"csrf": {b.csrf(b.get("/ui/login"))}, "token": {token}})
	if code != http.StatusSeeOther {
		b.t.Fatalf("sign in = %d: %s", code, body)
	}
	return b.csrf(b.get("/ui/"))
}

// status returns the status of event id.
func (b *bundle) status(id int64) inbox.Status {
	b.t.Helper()
	e, err := b.store.Get(b.t.Context(), id)
	if err != nil {
		b.t.Fatal(err)
	}
	return e.Status
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if h, err := console.New(console.Options{Store: store}); !errors.Is(err, console.ErrNoToken) || h != nil {
		t.Errorf("New without a token = %v, %v; want nil, ErrNoToken", h, err)
	}
	if _, err := console.New(console.Options{Token: token}); !errors.Is(err, console.ErrNoStore) {
		t.Errorf("New without a store = %v, want ErrNoStore", err)
	}
}

// Every page needs a session: a GET is sent to the sign-in form (and back
// after it), anything else is refused; a wrong token opens no session.
func TestSignInRequired(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{})
	id := b.accept("stripe", "acme", jsonID, "evt_1")[0]
	pages := []string{"/ui/", "/ui/events", "/ui/events/" + strconv.FormatInt(id, 10), "/ui/dead", "/ui/sources", "/ui/tail", "/ui/tail/stream", "/ui/nowhere"}
	for _, p := range pages {
		code, _ := b.do(http.MethodGet, p, nil)
		if code != http.StatusSeeOther {
			t.Errorf("GET %s without a session = %d, want 303 to the sign-in form", p, code)
		}
	}
	for _, p := range []string{"/ui/replay", "/ui/logout"} {
		b.wantCode(http.MethodPost, p, url.Values{"id": {"1"}}, http.StatusUnauthorized)
	}
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/ui/events", nil)
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "/ui/login?next=%2Fui%2Fevents" {
		t.Errorf("redirect to %q", loc)
	}

	code, form := b.do(http.MethodPost, "/ui/login", url.Values{"csrf": {b.csrf(b.get("/ui/login"))}, "token": {"wrong"}})
	if code != http.StatusUnauthorized || !strings.Contains(form, "not the admin token") {
		t.Errorf("wrong token = %d %s", code, form)
	}
	b.wantCode(http.MethodPost, "/ui/login", url.Values{"csrf": {b.csrf(form)}, "token": {token[:5]}}, http.StatusUnauthorized)
	b.wantCode(http.MethodGet, "/ui/", nil, http.StatusSeeOther)

	// A sign-in form posted without the form's own token (from another
	// site) is refused, even with the right admin token.
	b.wantCode(http.MethodPost, "/ui/login", url.Values{"csrf": {"forged"}, "token": {token}}, http.StatusForbidden)

	code, _ = b.do(http.MethodPost, "/ui/login", url.Values{"csrf": {b.csrf(b.get("/ui/login"))}, "token": {token}, "next": {"/ui/events"}})
	if code != http.StatusSeeOther {
		t.Fatalf("sign in = %d", code)
	}
	for _, p := range pages[:6] {
		b.get(p)
	}
	b.wantCode(http.MethodGet, "/ui/nowhere", nil, http.StatusNotFound)
}

// The session cookie is HttpOnly, SameSite=Strict, scoped to /ui/, Secure
// on TLS; its id is random; sign-in sends back only inside the console.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{})
	for _, c := range []struct {
		name      string
		tls       bool
		forwarded string
		secure    bool
	}{
		{"plain HTTP", false, "", false},
		{"TLS", true, "", true},
		{"behind a TLS proxy", false, "https", true},
		{"behind a plain proxy", false, "http", false},
	} {
		secure := c.secure
		h, err := console.New(b.opts)
		if err != nil {
			t.Fatal(err)
		}
		login := httptest.NewRequest(http.MethodGet, "/ui/login", nil)
		if c.tls {
			login.TLS = &tls.ConnectionState{}
		}
		login.Header.Set("X-Forwarded-Proto", c.forwarded)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, login)
		var formCookie *http.Cookie
		for _, ck := range rec.Result().Cookies() {
			formCookie = ck
		}
		var ids []string
		for range 2 {
			form := url.Values{"csrf": {b.csrf(rec.Body.String())}, "token": {token}, "next": {"//evil.example/ui/"}}
			req := httptest.NewRequest(http.MethodPost, "/ui/login", strings.NewReader(form.Encode()))
			if c.tls {
				req.TLS = &tls.ConnectionState{}
			}
			req.Header.Set("X-Forwarded-Proto", c.forwarded)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.AddCookie(formCookie)
			out := httptest.NewRecorder()
			h.ServeHTTP(out, req)
			if loc := out.Header().Get("Location"); loc != "/ui/" {
				t.Errorf("sign-in with next=//evil.example/ui/ sends to %q, want /ui/", loc)
			}
			for _, ck := range out.Result().Cookies() {
				if ck.Name != "hookgate_session" {
					continue
				}
				ids = append(ids, ck.Value)
				if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/ui/" || ck.Secure != secure {
					t.Errorf("%s: session cookie %+v", c.name, ck)
				}
				if len(ck.Value) < 40 {
					t.Errorf("session id %q is short", ck.Value)
				}
			}
		}
		if len(ids) != 2 || ids[0] == ids[1] {
			t.Errorf("two sign-ins gave session ids %q", ids)
		}
	}
}

// A session ends at its expiry and at sign-out.
func TestSessionEnds(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{SessionTTL: time.Hour})
	b.signIn()
	b.clock.Advance(59 * time.Minute)
	b.get("/ui/")
	b.clock.Advance(time.Minute)
	b.wantCode(http.MethodGet, "/ui/", nil, http.StatusSeeOther)

	csrf := b.signIn()
	b.wantCode(http.MethodPost, "/ui/logout", url.Values{}, http.StatusForbidden)
	b.get("/ui/")
	b.wantCode(http.MethodPost, "/ui/logout", url.Values{"csrf": {csrf}}, http.StatusSeeOther)
	b.wantCode(http.MethodGet, "/ui/", nil, http.StatusSeeOther)
}

// A POST without the session's CSRF token changes nothing.
func TestCSRFRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{})
	ids := b.accept("stripe", "acme", jsonID, "evt_1")
	b.kill("refused", ids...)
	csrf := b.signIn()
	other := setup(t, console.Options{})
	otherCSRF := other.signIn()
	for name, form := range map[string]url.Values{
		"none":                   {"id": {fmt.Sprint(ids[0])}, "confirm": {"1"}},
		"empty":                  {"id": {fmt.Sprint(ids[0])}, "confirm": {"1"}, "csrf": {""}},
		"another session's":      {"id": {fmt.Sprint(ids[0])}, "confirm": {"1"}, "csrf": {otherCSRF}},
		"the session's and more": {"id": {fmt.Sprint(ids[0])}, "confirm": {"1"}, "csrf": {csrf + "x"}},
	} {
		b.wantCode(http.MethodPost, "/ui/replay", form, http.StatusForbidden)
		if st := b.status(ids[0]); st != inbox.StatusDead {
			t.Fatalf("replay with %s CSRF token: event is %s", name, st)
		}
	}
	code, body := b.do(http.MethodPost, "/ui/replay", url.Values{"id": {fmt.Sprint(ids[0])}, "confirm": {"1"}, "csrf": {csrf}})
	if code != http.StatusOK || !strings.Contains(body, "Replayed 1 event") {
		t.Fatalf("replay with the token = %d %s", code, body)
	}
	if st := b.status(ids[0]); st != inbox.StatusReceived {
		t.Errorf("after replay the event is %s", st)
	}
}

// What a sender put in a payload, a header or an id is shown as text.
func TestEscaping(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{})
	const evil = `<script>alert("x")</script>`
	k := dedupe.Key{Tenant: evil, Provider: "stripe", EventID: evil}
	out, err := b.store.Accept(t.Context(), []inbox.Item{{Window: time.Hour, Event: inbox.Event{
		Hash: k.Hash(), Scope: k.Scope(), Source: "stripe", Provider: "stripe", Tenant: evil, EventID: evil, Type: evil,
		Payload: []byte(`{"note":"` + strings.ReplaceAll(evil, `"`, `\"`) + `"}`), Headers: map[string]string{"X-Evil": evil},
	}}, {Window: time.Hour, Event: inbox.Event{
		Hash: dedupe.Key{EventID: "raw"}.Hash(), Source: "stripe", Provider: "stripe", EventID: "raw",
		Payload: []byte(evil), Headers: map[string]string{},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	b.kill(evil, out[0].ID)
	b.signIn()
	for _, p := range []string{"/ui/events", "/ui/dead", "/ui/events/" + fmt.Sprint(out[0].ID), "/ui/events/" + fmt.Sprint(out[1].ID), "/ui/events?tenant=" + url.QueryEscape(evil)} {
		body := b.get(p)
		if strings.Contains(body, "<script>alert") {
			t.Errorf("%s shows the script unescaped", p)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(") {
			t.Errorf("%s does not show the script as text", p)
		}
	}
}

var nextLink = regexp.MustCompile(`href="/ui/events\?([^"]+)" rel="next"`)
var rowLink = regexp.MustCompile(`<td><a href="/ui/events/(\d+)">`)

// Lists are paged by id, newest first, and keep their filter.
func TestPaging(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{})
	var ids []string
	for i := range 2*console.PageSize + 7 {
		ids = append(ids, fmt.Sprintf("evt_%d", i))
	}
	b.accept("stripe", "acme", jsonID, ids...)
	b.accept("github", "acme", jsonID, "gh_1", "gh_2")
	b.signIn()
	var seen []int64
	pages := 0
	for target := "/ui/events?source=stripe"; target != ""; pages++ {
		body := b.get(target)
		for _, m := range rowLink.FindAllStringSubmatch(body, -1) {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			if len(seen) > 0 && id >= seen[len(seen)-1] {
				t.Fatalf("id %d after %d: not newest first", id, seen[len(seen)-1])
			}
			seen = append(seen, id)
		}
		target = ""
		if m := nextLink.FindStringSubmatch(body); m != nil {
			q, _ := url.ParseQuery(strings.ReplaceAll(m[1], "&amp;", "&"))
			if q.Get("source") != "stripe" {
				t.Errorf("next page %q loses the filter", m[1])
			}
			target = "/ui/events?" + q.Encode()
		}
	}
	if len(seen) != len(ids) || pages != 3 {
		t.Errorf("%d events on %d pages, want %d on 3", len(seen), pages, len(ids))
	}
	if body := b.get("/ui/events?source=github"); len(rowLink.FindAllString(body, -1)) != 2 || nextLink.MatchString(body) {
		t.Errorf("github: want two events and no next page")
	}
	b.wantCode(http.MethodGet, "/ui/events?status=lost", nil, http.StatusBadRequest)
	b.wantCode(http.MethodGet, "/ui/events?q=3", nil, http.StatusSeeOther)
}

// The event page shows what is stored of an event and each attempt.
func TestEventPage(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{})
	id := b.accept("stripe", "acme", func(string) string { return `{"b":1,"a":[2,3]}` }, "evt_1")[0]
	b.signIn()
	body := b.get("/ui/events/" + fmt.Sprint(id))
	for _, want := range []string{"evt_1", "acme", "charge ch_evt_1", "{\n  &#34;b&#34;: 1,\n  &#34;a&#34;: [\n    2,", "Content-Type", "application/json", "No delivery yet."} {
		if !strings.Contains(body, want) {
			t.Errorf("event page lacks %q", want)
		}
	}
	b.wantCode(http.MethodGet, "/ui/events/999", nil, http.StatusNotFound)
}

// A replay shows its count first and runs only when confirmed.
func TestReplayCountsFirst(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{})
	stripe := b.accept("stripe", "acme", jsonID, "a", "b", "c")
	other := b.accept("stripe", "globex", jsonID, "d")
	gh := b.accept("github", "acme", jsonID, "e")
	b.kill("refused", append(append(stripe, other...), gh...)...)
	csrf := b.signIn()

	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"dead": {"1"}, "source": {"stripe"}}, "<b>4</b> event(s)"},
		{url.Values{"dead": {"1"}}, "<b>5</b> event(s)"},
		{url.Values{"dead": {"1"}, "source": {"stripe"}, "tenant": {"acme"}}, "<b>3</b> event(s)"},
		{url.Values{"id": {fmt.Sprint(stripe[0]), fmt.Sprint(gh[0])}}, "<b>2</b> event(s)"},
	} {
		c.form.Set("csrf", csrf)
		code, body := b.do(http.MethodPost, "/ui/replay", c.form)
		if code != http.StatusOK || !strings.Contains(body, c.want) {
			t.Errorf("replay %v = %d, want the count %q in %s", c.form, code, c.want, body)
		}
	}
	for _, id := range append(stripe, gh...) {
		if st := b.status(id); st != inbox.StatusDead {
			t.Fatalf("counting a replay changed event %d to %s", id, st)
		}
	}
	for _, bad := range []url.Values{
		{},
		{"id": {"x"}},
		{"id": {"1"}, "dead": {"1"}},
		{"id": {"1"}, "destination": {"app"}},
	} {
		bad.Set("csrf", csrf)
		b.wantCode(http.MethodPost, "/ui/replay", bad, http.StatusBadRequest)
	}
	code, body := b.do(http.MethodPost, "/ui/replay", url.Values{"csrf": {csrf}, "confirm": {"1"}, "dead": {"1"}, "source": {"stripe"}, "tenant": {"acme"}})
	if code != http.StatusOK || !strings.Contains(body, "Replayed 3 event(s)") {
		t.Errorf("confirmed replay = %d %s", code, body)
	}
	for _, id := range stripe {
		if st := b.status(id); st != inbox.StatusReceived {
			t.Errorf("replayed event %d is %s", id, st)
		}
	}
	if st := b.status(other[0]); st != inbox.StatusDead {
		t.Errorf("event of another tenant is %s", st)
	}
}

// The sources page shows the URL to paste and never a secret.
func TestSourcesPage(t *testing.T) {
	t.Parallel()
	const secret = "whsec_c2VjcmV0LXRoYXQtbXVzdC1ub3Qtc2hvdw=="
	b := setup(t, console.Options{Sources: []config.Source{
		{Name: "stripe", Provider: "stripe", Secret: config.NewSecret(secret), Window: config.Duration(time.Hour),
			Destinations: []config.Destination{{Name: "app", URL: "https://app.example/hooks?key=" + secret, On: config.OnEvent}}},
		{Name: "hooks", Provider: "standard", Secret: config.NewSecret(secret), Tenant: "path", Key: []string{"header:webhook-id"},
			Window: config.Duration(36 * time.Hour)},
	}})
	b.accept("stripe", "", jsonID, "evt_1")
	b.signIn()
	body := b.get("/ui/sources")
	if strings.Contains(body, secret) || strings.Contains(body, "c2VjcmV0") {
		t.Error("the sources page shows a secret")
	}
	for _, want := range []string{b.srv.URL + "/in/stripe", b.srv.URL + "/in/hooks/{tenant}", "json:id", "<dd>1h</dd>", "<dd>1d12h</dd>",
		"https://app.example", "the body and the t= timestamp", `<time datetime="` + b.clock.Now().UTC().Format("2006-01-02T15:04")} {
		if !strings.Contains(body, want) {
			t.Errorf("sources page lacks %q", want)
		}
	}
}

// The live tail streams events stored after it opened, of its source,
// and holds at most MaxTail streams.
func TestTail(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{MaxTail: 1, TailEvery: 5 * time.Millisecond})
	b.accept("stripe", "acme", jsonID, "old")
	b.signIn()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/ui/tail/stream?source=stripe", nil)
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("tail = %d %s", resp.StatusCode, ct)
	}
	if code := b.openTail(); code != http.StatusServiceUnavailable {
		t.Errorf("a second tail with MaxTail 1 = %d, want 503", code)
	}
	b.accept("github", "acme", jsonID, "other")
	want := b.accept("stripe", "acme", jsonID, "new_1", "new_2")
	lines := bufio.NewScanner(resp.Body)
	var got []string
	for len(got) < 2 && lines.Scan() {
		if id, ok := strings.CutPrefix(lines.Text(), "id: "); ok {
			got = append(got, id)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint([]string{fmt.Sprint(want[0]), fmt.Sprint(want[1])}) {
		t.Errorf("tail sent ids %v, want %v", got, want)
	}
	cancel()
	resp.Body.Close()
	// The slot is given back when the stream ends.
	waitFor(t, "the tail's slot", func() bool { return b.openTail() == http.StatusOK })
}

// openTail opens a live tail, returns its status and closes it.
func (b *bundle) openTail() int {
	b.t.Helper()
	ctx, stop := context.WithCancel(b.t.Context())
	defer stop()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/ui/tail/stream", nil)
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitFor polls cond until it holds or ten seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition over HTTP
	}
}

// Events are found by provider event id, key, apply outcome and time.
func TestSearch(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{})
	early := b.accept("stripe", "acme", jsonID, "evt_a", "evt_b")
	b.clock.Advance(2 * time.Hour)
	late := b.accept("stripe", "acme", jsonID, "evt_c")
	leased, err := b.store.Lease(t.Context(), "test", 1, time.Minute)
	if err != nil || len(leased) != 1 {
		t.Fatalf("lease: %v %v", leased, err)
	}
	if _, err := b.store.Apply(t.Context(), leased); err != nil {
		t.Fatal(err)
	}
	evtB, err := b.store.Get(t.Context(), early[1])
	if err != nil {
		t.Fatal(err)
	}
	b.signIn()
	rows := func(query string) []string {
		t.Helper()
		var out []string
		for _, m := range rowLink.FindAllStringSubmatch(b.get("/ui/events?"+query), -1) {
			out = append(out, m[1])
		}
		return out
	}
	mid := b.clock.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04")
	for query, want := range map[string][]int64{
		"q=evt_b":                             {early[1]},
		"q=" + evtB.Hash.String():             {early[1]},
		"q=evt_none":                          nil,
		"outcome=applied":                     {early[0]},
		"outcome=pending":                     {late[0], early[1]},
		"since=" + mid:                        {late[0]},
		"until=" + mid:                        {early[1], early[0]},
		"until=" + mid + "&outcome=pending":   {early[1]},
		"source=stripe&tenant=acme&q=evt_c":   {late[0]},
		"source=stripe&tenant=globex&q=evt_c": nil,
	} {
		if got, w := fmt.Sprint(rows(query)), fmt.Sprint(want); got != w && !(len(want) == 0 && got == "[]") {
			t.Errorf("%s: events %s, want %s", query, got, w)
		}
	}
	for _, bad := range []string{"outcome=lost", "since=yesterday", "until=2026-13-01T00:00"} {
		b.wantCode(http.MethodGet, "/ui/events?"+bad, nil, http.StatusBadRequest)
	}
}

// A burst larger than one look at the inbox reaches the tail whole, in
// order: on an empty inbox and after events stored before the tail opened.
func TestTailBurst(t *testing.T) {
	t.Parallel()
	for _, stored := range []int{0, 3} {
		t.Run(fmt.Sprintf("%d stored before", stored), func(t *testing.T) {
			t.Parallel()
			b := setup(t, console.Options{TailEvery: 5 * time.Millisecond})
			for i := range stored {
				b.accept("stripe", "acme", jsonID, fmt.Sprintf("old_%d", i))
			}
			tailBurst(t, b)
		})
	}
}

func tailBurst(t *testing.T, b *bundle) {
	b.signIn()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/ui/tail/stream", nil)
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ids []string
	for i := range 250 {
		ids = append(ids, fmt.Sprintf("evt_%d", i))
	}
	want := b.accept("stripe", "acme", jsonID, ids...)
	lines := bufio.NewScanner(resp.Body)
	var got []string
	for len(got) < len(want) && lines.Scan() {
		if id, ok := strings.CutPrefix(lines.Text(), "id: "); ok {
			got = append(got, id)
		}
	}
	for i, id := range want {
		if i >= len(got) || got[i] != fmt.Sprint(id) {
			t.Fatalf("tail sent %d ids, the %dth %v; want %d in order", len(got), i, got[min(i, len(got)-1)], len(want))
		}
	}
}

// The overview shows each source's counts, every configured destination
// with its state, and the charts.
func TestOverview(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{Sources: []config.Source{{Name: "stripe", Provider: "stripe",
		Destinations: []config.Destination{{Name: "app", URL: "http://app.example/"}, {Name: "audit", URL: "http://audit.example/"}}}}})
	ids := b.accept("stripe", "acme", jsonID, "a", "b", "c", "d")
	b.kill("refused", ids[0])
	if err := b.store.SetLaneState(t.Context(), inbox.LaneState{Lane: inbox.Lane{Source: "stripe", Destination: "audit"},
		State: inbox.LaneFailing, Failures: 2, LastError: "<b>connection refused</b>", Changed: b.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	b.signIn()
	body := b.get("/ui/")
	for _, want := range []string{
		`<td><a href="/ui/events?source=stripe">stripe</a></td><td>4</td><td>0</td><td>0.0%</td>`,
		`<td>3</td><td>0</td><td>0</td><td>0</td><td>1</td>`,
		`<b>3</b> pending`,
		`<td>stripe</td><td><a href="/ui/destinations/app">app</a></td><td><span class="badge healthy">healthy</span></td>`,
		`<td>stripe</td><td><a href="/ui/destinations/audit">audit</a></td><td><span class="badge failing">failing</span></td><td>2</td>`,
		`&lt;b&gt;connection refused&lt;/b&gt;`,
		`<span class="key received">received 4</span>`, `<span class="key dead">dead 1</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %s", want)
		}
	}
}
