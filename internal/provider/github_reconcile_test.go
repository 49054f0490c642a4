package provider_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/internal/reconcile/githubfake"
	"github.com/hookgate/hookgate/internal/source"
)

const (
	githubToken = "github_pat_reconcile_test"
	githubHook  = "repos/acme/shop/hooks/498912341"
)

// githubDeliveries holds n deliveries in a fake GitHub hook, one a
// minute up to now, of two events in turn.
func githubDeliveries(t *testing.T, n int) (*githubfake.API, *httptest.Server, []githubfake.Delivery) {
	t.Helper()
	api := githubfake.New(githubToken, githubHook, "hook-secret")
	now := time.Now()
	var ds []githubfake.Delivery
	for i := range n {
		ds = append(ds, githubfake.Delivery{GUID: fmt.Sprintf("0b989ba4-242f-11e5-81e1-%012d", i),
			Event: []string{"push", "issues"}[i%2], At: now.Add(-time.Duration(n-i) * time.Minute), Body: []byte(`{}`)})
	}
	api.Add(ds...)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return api, srv, ds
}

func newGitHubReconciler(t *testing.T, srv *httptest.Server, s *sleeps) provider.Redeliverer {
	t.Helper()
	p, _ := provider.Lookup("github")
	r, err := p.Reconcile(provider.ReconcileConfig{APIURL: srv.URL, Key: githubToken, Hook: githubHook,
		Client: srv.Client(), Sleep: s.sleep})
	if err != nil {
		t.Fatal(err)
	}
	return r.(provider.Redeliverer)
}

// TestGitHubReconcileListsDeliveries: the deliveries of the window are
// listed newest first over pages of 100 (per_page=100, the Link header's
// cursor), each GUID once however often it was delivered, with the
// headers intake keys a webhook by; the listing stops at the first
// delivery older than the window, and an event filter keeps its events.
func TestGitHubReconcileListsDeliveries(t *testing.T) {
	t.Parallel()
	api, srv, ds := githubDeliveries(t, 260)
	// Two more attempts of one delivery: the same GUID, newer.
	again := ds[200]
	again.At = time.Now()
	api.Add(again, again)
	r := newGitHubReconciler(t, srv, &sleeps{})
	since := time.Now().Add(-250 * time.Minute)
	pages := listAll(t, r, provider.ListQuery{Since: since})
	var want []string
	want = append(want, again.GUID)
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].At.Before(since) {
			break
		}
		if i != 200 {
			want = append(want, ds[i].GUID)
		}
	}
	var got []string
	for _, p := range pages {
		for _, d := range p.Deliveries {
			got = append(got, d.Header.Get("X-GitHub-Delivery"))
			if d.Header.Get("X-GitHub-Event") != d.Type || d.ID == "" || d.Body != nil {
				t.Errorf("delivery %+v: want the event's header and type, an id and no body", d)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listed %d GUIDs, want %d newest first, each once", len(got), len(want))
	}
	reqs := api.Requests()
	if len(reqs) != 3 || len(pages) != 3 || pages[2].Next != "" {
		t.Fatalf("%d requests for %d pages: %v", len(reqs), len(pages), reqs)
	}
	for i, q := range reqs {
		if !strings.HasPrefix(q, "GET /"+githubHook+"/deliveries?") || !strings.Contains(q, "per_page=100") {
			t.Errorf("request %d: %s", i, q)
		}
		if i > 0 && !strings.Contains(q, "cursor="+pages[i-1].Next) {
			t.Errorf("request %d: %s, want the cursor %s of the page before", i, q, pages[i-1].Next)
		}
	}

	pushes := listAll(t, r, provider.ListQuery{Since: since, Types: []string{"push"}})
	for _, p := range pushes {
		for _, d := range p.Deliveries {
			if d.Type != "push" {
				t.Errorf("types [push] listed %s", d.Type)
			}
		}
	}
	resumed := listAll(t, r, provider.ListQuery{Since: since, After: pages[0].Next})
	if n := len(ids(resumed)); n != len(want)-len(pages[0].Deliveries) {
		t.Errorf("resumed after the first page: %d listed, want %d", n, len(want)-len(pages[0].Deliveries))
	}
}

// TestGitHubReconcileKeysAsTheWebhook: a listed delivery's headers key it
// exactly as its webhook, whatever the webhook's body says.
func TestGitHubReconcileKeysAsTheWebhook(t *testing.T) {
	t.Parallel()
	_, srv, ds := githubDeliveries(t, 4)
	src, err := source.New(config.Source{Name: "gh", Provider: "github", Secret: config.NewSecret("hook-secret"),
		Entity: config.Entity{ID: "json:issue.id"}}, config.Default().Dedupe)
	if err != nil {
		t.Fatal(err)
	}
	pages := listAll(t, newGitHubReconciler(t, srv, &sleeps{}), provider.ListQuery{Since: time.Now().Add(-time.Hour)})
	for i, d := range pages[0].Deliveries {
		key, hash, err := src.HeaderKey(d.Header)
		if err != nil {
			t.Fatal(err)
		}
		hook := ds[len(ds)-1-i]
		body := []byte(`{"action":"opened","issue":{"id":1}}`)
		r := httptest.NewRequest(http.MethodPost, "/in/gh", strings.NewReader(string(body)))
		r.Header.Set("X-GitHub-Delivery", hook.GUID)
		r.Header.Set("X-GitHub-Event", hook.Event)
		want, err := src.Events(r, body, "")
		if err != nil {
			t.Fatal(err)
		}
		if hash != want[0].Hash || key != want[0].Key {
			t.Errorf("%s: listed key %+v, webhook's %+v", hook.GUID, key, want[0].Key)
		}
	}
}

// TestGitHubReconcileRedeliver: a redelivery is POST
// {hook}/deliveries/{id}/attempts of the listed id; GitHub's rate limits
// (429, and 403 with X-RateLimit-Remaining: 0) are waited out, an unknown
// delivery is refused, and a refused token fails at once, naming no token.
func TestGitHubReconcileRedeliver(t *testing.T) {
	t.Parallel()
	api, srv, _ := githubDeliveries(t, 3)
	var s sleeps
	r := newGitHubReconciler(t, srv, &s)
	api.RateLimit(1)
	pages := listAll(t, r, provider.ListQuery{Since: time.Now().Add(-time.Hour)})
	d := pages[0].Deliveries[0]
	api.Target("http://127.0.0.1:1/unreachable")
	if err := r.Redeliver(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	api.Wait()
	if reqs := api.Requests(); reqs[len(reqs)-1] != "POST /"+githubHook+"/deliveries/"+d.ID+"/attempts" {
		t.Errorf("redelivery request %s", reqs[len(reqs)-1])
	}
	if got := api.Redelivered(); !slices.Equal(got, []string{d.Header.Get("X-GitHub-Delivery")}) {
		t.Errorf("redelivered %v", got)
	}
	if !slices.Equal(s.d, []time.Duration{time.Second}) {
		t.Errorf("waited %v after a 429 with Retry-After: 1", s.d)
	}
	if err := r.Redeliver(t.Context(), provider.Delivery{ID: "1"}); !errors.Is(err, provider.ErrRefused) {
		t.Errorf("redelivery of an unknown delivery: %v, want ErrRefused", err)
	}

	reset := time.Now().Add(90 * time.Second)
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", fmt.Sprint(reset.Unix()))
		http.Error(w, `{"message":"API rate limit exceeded"}`, http.StatusForbidden)
	}))
	t.Cleanup(limited.Close)
	var s2 sleeps
	p, _ := provider.Lookup("github")
	lr, err := p.Reconcile(provider.ReconcileConfig{APIURL: limited.URL, Key: githubToken, Hook: githubHook, Sleep: s2.sleep, MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	err = lr.List(t.Context(), provider.ListQuery{}, func(provider.Page) error { return nil })
	if !errors.Is(err, provider.ErrUnavailable) || len(s2.d) != 1 || s2.d[0] < 80*time.Second || s2.d[0] > 90*time.Second {
		t.Errorf("a 403 of the primary rate limit: %v after waits %v, want a wait until its reset", err, s2.d)
	}

	bad, err := p.Reconcile(provider.ReconcileConfig{APIURL: srv.URL, Key: "github_pat_wrong", Hook: githubHook})
	if err != nil {
		t.Fatal(err)
	}
	err = bad.List(t.Context(), provider.ListQuery{}, func(provider.Page) error { return nil })
	if !errors.Is(err, provider.ErrRefused) || !strings.Contains(err.Error(), "the token was refused") || strings.Contains(err.Error(), "github_pat_wrong") {
		t.Errorf("a wrong token: %v", err)
	}
}

// TestGitHubReconcileWindow: a listing reaches no further back than
// GitHub keeps deliveries, 3 days, whatever it is asked.
func TestGitHubReconcileWindow(t *testing.T) {
	t.Parallel()
	api := githubfake.New(githubToken, githubHook, "s")
	now := time.Now()
	for _, age := range []time.Duration{time.Hour, 71 * time.Hour, 73 * time.Hour, 100 * time.Hour} {
		api.Add(githubfake.Delivery{GUID: age.String(), Event: "push", At: now.Add(-age)})
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	got := ids(listAll(t, newGitHubReconciler(t, srv, &sleeps{}), provider.ListQuery{Since: now.Add(-30 * 24 * time.Hour)}))
	if len(got) != 2 {
		t.Errorf("listed %d deliveries of a month, want the 2 of the last 3 days", len(got))
	}
}
