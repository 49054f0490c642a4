package console_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/inbox"
)

// Send test event posts the source's example event over HTTP to the
// gateway's own intake, signed with the source's secret: the intake
// stores it, and the sources page then shows the intake's answer with a
// link to the stored event. Without the session's CSRF token nothing is
// sent.
func TestSendTestEvent(t *testing.T) {
	t.Parallel()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(app.Close)
	g := startGateway(t, app.URL)
	u, err := url.Parse(g.url)
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	b := &bundle{t: t, store: g.store, srv: &httptest.Server{URL: g.url},
		client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	csrf := b.signIn()
	page := b.get("/ui/sources")
	for _, want := range []string{`action="/ui/sources/stripe/test"`, "<option>payment_intent.succeeded</option>", "<option>charge.refunded</option>"} {
		if !strings.Contains(page, want) {
			t.Errorf("sources page lacks %s", want)
		}
	}
	stored := func() []inbox.Event {
		evs, err := g.store.List(t.Context(), inbox.Filter{Source: "stripe"})
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}

	b.wantCode(http.MethodPost, "/ui/sources/stripe/test", url.Values{"event": {"charge.refunded"}}, http.StatusForbidden)
	if evs := stored(); len(evs) != 0 {
		t.Fatalf("a POST without the CSRF token sent %d events", len(evs))
	}
	code, body := b.do(http.MethodPost, "/ui/sources/stripe/test", url.Values{"csrf": {csrf}, "event": {"charge.refunded"}})
	if code != http.StatusSeeOther {
		t.Fatalf("send = %d: %s", code, body)
	}
	evs := stored()
	if len(evs) != 1 || evs[0].Type != "charge.refunded" || evs[0].Provider != "stripe" {
		t.Fatalf("stored after the send: %+v, want one charge.refunded event", evs)
	}
	page = b.get("/ui/sources")
	for _, want := range []string{
		"Sent stripe charge.refunded to POST http://" + u.Host + "/in/stripe: the intake answered 202 Accepted",
		`<a href="/ui/events/` + itoa(evs[0].ID) + `">event ` + itoa(evs[0].ID) + `</a>`,
		`&#34;outcome&#34;:&#34;accepted&#34;`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("sources page after the send lacks %s:\n%.3000s", want, page)
		}
	}
	if strings.Contains(b.get("/ui/sources"), "the intake answered") {
		t.Error("the answer shows twice")
	}
	b.wantCode(http.MethodPost, "/ui/sources/nowhere/test", url.Values{"csrf": {csrf}}, http.StatusNotFound)
	b.wantCode(http.MethodPost, "/ui/sources/stripe/test", url.Values{"csrf": {csrf}, "event": {"push"}}, http.StatusBadRequest)
}
