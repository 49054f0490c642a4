package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/internal/reconcile/stripefake"
	"github.com/hookgate/hookgate/internal/source"
)

// stripeNow is the clock of the Stripe reconciler tests.
var stripeNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

const stripeKey = "rk_test_51HookgateRestricted"

// stripeEvents holds n events, one a minute up to stripeNow, of three
// types in turn, in a fake Stripe API; it returns them newest first.
func stripeEvents(t *testing.T, n int) (*stripefake.API, *httptest.Server, []stripefake.Event) {
	t.Helper()
	types := []string{"payment_intent.succeeded", "charge.succeeded", "customer.created"}
	api := stripefake.New(stripeKey)
	var events []stripefake.Event
	for i := n - 1; i >= 0; i-- {
		events = append(events, stripefake.Event{ID: fmt.Sprintf("evt_1Qa%06d", i), Type: types[i%3],
			Created: stripeNow.Add(-time.Duration(n-1-i) * time.Minute)})
	}
	api.Add(events...)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return api, srv, events
}

// sleeps records the waits a reconciler asks for, without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func newStripeReconciler(t *testing.T, srv *httptest.Server, s *sleeps, attempts int) provider.Reconciler {
	t.Helper()
	p, _ := provider.Lookup("stripe")
	r, err := p.Reconcile(provider.ReconcileConfig{APIURL: srv.URL, Key: stripeKey, Client: srv.Client(),
		Now: func() time.Time { return stripeNow }, Sleep: s.sleep, MaxAttempts: attempts})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// listAll lists q, failing the test on error.
func listAll(t *testing.T, r provider.Reconciler, q provider.ListQuery) []provider.Page {
	t.Helper()
	var pages []provider.Page
	if err := r.List(t.Context(), q, func(p provider.Page) error { pages = append(pages, p); return nil }); err != nil {
		t.Fatalf("List: %v", err)
	}
	return pages
}

func ids(pages []provider.Page) []string {
	var out []string
	for _, p := range pages {
		for _, d := range p.Deliveries {
			out = append(out, d.ID)
		}
	}
	return out
}

// TestStripeReconcileListsEveryEvent: every event of the asked types
// created since the checkpoint is listed once, over pages of at most 100
// fetched with created[gte], types[], limit=100 and starting_after the
// previous page's last event, until has_more is false.
func TestStripeReconcileListsEveryEvent(t *testing.T) {
	t.Parallel()
	api, srv, events := stripeEvents(t, 450)
	since := stripeNow.Add(-400 * time.Minute)
	types := []string{"payment_intent.succeeded", "charge.succeeded"}
	var want []string
	for _, e := range events {
		if e.Created.Unix() >= since.Unix() && slices.Contains(types, e.Type) {
			want = append(want, e.ID)
		}
	}
	pages := listAll(t, newStripeReconciler(t, srv, &sleeps{}, 0), provider.ListQuery{Since: since, Types: types})
	if got := ids(pages); !slices.Equal(got, want) {
		t.Fatalf("listed %d events, want %d: %v", len(got), len(want), got)
	}
	if len(pages) != 3 {
		t.Errorf("%d pages, want 3 (%d events, 100 a page)", len(pages), len(want))
	}
	qs := api.Requests()
	if len(qs) != len(pages) {
		t.Fatalf("%d requests for %d pages", len(qs), len(pages))
	}
	for i, q := range qs {
		if q.Get("limit") != "100" || q.Get("created[gte]") != strconv.FormatInt(since.Unix(), 10) || !slices.Equal(q["types[]"], types) {
			t.Errorf("request %d: %v", i, q)
		}
		wantAfter := ""
		if i > 0 {
			wantAfter = pages[i-1].Next
		}
		if q.Get("starting_after") != wantAfter {
			t.Errorf("request %d: starting_after %q, want %q", i, q.Get("starting_after"), wantAfter)
		}
	}
	for i, p := range pages {
		if last := i == len(pages)-1; (p.Next == "") != last {
			t.Errorf("page %d: Next %q", i, p.Next)
		}
	}
	d := pages[0].Deliveries[0]
	e := events[slices.IndexFunc(events, func(e stripefake.Event) bool { return e.ID == want[0] })]
	if d.Created.Unix() != e.Created.Unix() || d.Type != e.Type || string(d.Body) != string(e.Body(0)) {
		t.Errorf("first delivery %s %s %s, want the newest event of the types as listed: %s", d.ID, d.Type, d.Created, e.Body(0))
	}
}

// TestStripeReconcileKeysAsTheWebhook: a listed event is keyed exactly as
// its webhook is (the evt_ id, scope and entity), whatever else differs in
// the two copies.
func TestStripeReconcileKeysAsTheWebhook(t *testing.T) {
	t.Parallel()
	_, srv, events := stripeEvents(t, 5)
	sc := config.Source{Name: "billing", Provider: "stripe", Secret: config.NewSecret("whsec_stripe_test")}
	src, err := source.New(sc, config.Default().Dedupe)
	if err != nil {
		t.Fatal(err)
	}
	pages := listAll(t, newStripeReconciler(t, srv, &sleeps{}, 0), provider.ListQuery{Since: stripeNow.Add(-time.Hour)})
	listed := pages[0].Deliveries
	if len(listed) != len(events) {
		t.Fatalf("listed %d, want %d", len(listed), len(events))
	}
	for i, d := range listed {
		r := httptest.NewRequest(http.MethodPost, "/in/billing", nil)
		r.Header = d.Header.Clone()
		got, err := src.Events(r, d.Body, "")
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: Events: %v, %v", d.ID, got, err)
		}

		hook := events[i].Body(1)
		wr := httptest.NewRequest(http.MethodPost, "/in/billing", strings.NewReader(string(hook)))
		if err := src.Signer().Sign(wr, hook); err != nil {
			t.Fatal(err)
		}
		if _, err := src.Authenticate(wr, hook); err != nil {
			t.Fatal(err)
		}
		want, err := src.Events(wr, hook, "")
		if err != nil || len(want) != 1 {
			t.Fatalf("webhook: %v, %v", want, err)
		}
		if got[0].Hash != want[0].Hash || got[0].Key != want[0].Key || got[0].Entity != want[0].Entity {
			t.Errorf("%s: listed key %+v %+v, webhook's %+v %+v", d.ID, got[0].Key, got[0].Entity, want[0].Key, want[0].Entity)
		}
		if got[0].EventID != d.ID {
			t.Errorf("event id %q, want %q", got[0].EventID, d.ID)
		}
	}
}

// TestStripeReconcileRateLimits: a 429 waits what its Retry-After says (at
// most provider.RetryMax), a 429 without one and a 5xx wait 1 s, 2 s, …
// per request, and the listing goes on with nothing lost or repeated.
func TestStripeReconcileRateLimits(t *testing.T) {
	t.Parallel()
	api, srv, _ := stripeEvents(t, 150)
	api.Fail(1, http.StatusTooManyRequests, "7")
	api.Fail(2, http.StatusInternalServerError, "")
	api.Fail(3, http.StatusServiceUnavailable, "")
	api.Fail(5, http.StatusTooManyRequests, "")
	api.Fail(6, http.StatusTooManyRequests, "3600")
	var s sleeps
	pages := listAll(t, newStripeReconciler(t, srv, &s, 0), provider.ListQuery{Since: stripeNow.Add(-24 * time.Hour)})
	got := ids(pages)
	slices.Sort(got)
	if len(got) != 150 || len(slices.Compact(got)) != 150 {
		t.Errorf("listed %d events (%d different), want 150 once each", len(got), len(slices.Compact(got)))
	}
	want := []time.Duration{7 * time.Second, time.Second, 2 * time.Second, time.Second, provider.RetryMax}
	if !slices.Equal(s.d, want) {
		t.Errorf("waited %v, want %v", s.d, want)
	}
	if n := len(api.Requests()); n != 7 {
		t.Errorf("%d requests, want 7 (5 answered with an error, 2 pages)", n)
	}
}

// TestStripeReconcileGivesUp: an API that keeps failing fails the listing
// after MaxAttempts tries of one request; a refused key fails it at once,
// without showing the key.
func TestStripeReconcileGivesUp(t *testing.T) {
	t.Parallel()
	api, srv, _ := stripeEvents(t, 10)
	for i := 1; i <= 10; i++ {
		api.Fail(i, http.StatusBadGateway, "")
	}
	var s sleeps
	err := newStripeReconciler(t, srv, &s, 3).List(t.Context(), provider.ListQuery{Since: stripeNow.Add(-time.Hour)},
		func(provider.Page) error { t.Error("a page of a failing API"); return nil })
	if !errors.Is(err, provider.ErrUnavailable) || len(api.Requests()) != 3 || len(s.d) != 2 {
		t.Errorf("List: %v after %d requests and %d waits, want ErrUnavailable after 3 and 2", err, len(api.Requests()), len(s.d))
	}

	_, srv2, _ := stripeEvents(t, 10)
	p, _ := provider.Lookup("stripe")
	r, err := p.Reconcile(provider.ReconcileConfig{APIURL: srv2.URL, Key: "rk_test_wrong", Now: func() time.Time { return stripeNow }, Sleep: s.sleep})
	if err != nil {
		t.Fatal(err)
	}
	err = r.List(t.Context(), provider.ListQuery{Since: stripeNow.Add(-time.Hour)}, func(provider.Page) error { return nil })
	if !errors.Is(err, provider.ErrRefused) || !strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), "rk_test_wrong") {
		t.Errorf("List with a wrong key: %v, want ErrRefused naming no key", err)
	}
	if len(s.d) != 2 {
		t.Errorf("a refused key was retried (%d waits)", len(s.d)-2)
	}
}

// TestStripeReconcileResumes: a listing resumed from a page's Next lists
// exactly the events after that page; a page that cannot be stored stops
// the listing.
func TestStripeReconcileResumes(t *testing.T) {
	t.Parallel()
	api, srv, _ := stripeEvents(t, 250)
	r := newStripeReconciler(t, srv, &sleeps{}, 0)
	q := provider.ListQuery{Since: stripeNow.Add(-24 * time.Hour)}
	all := listAll(t, r, q)
	stop := errors.New("store down")
	var first []provider.Page
	err := r.List(t.Context(), q, func(p provider.Page) error { first = append(first, p); return stop })
	if !errors.Is(err, stop) || len(first) != 1 {
		t.Fatalf("List with a failing store: %v after %d pages, want the store's error after 1", err, len(first))
	}
	q.After = first[0].Next
	rest := listAll(t, r, q)
	if got, want := append(ids(first), ids(rest)...), ids(all); !slices.Equal(got, want) {
		t.Errorf("first page and resumed listing: %d events, want %d as listed at once", len(got), len(want))
	}
	if n := len(api.Requests()); n != len(all)+1+len(rest) {
		t.Errorf("%d requests, want %d", n, len(all)+1+len(rest))
	}
}

// TestStripeReconcileQuery: a checkpoint older than Stripe keeps events
// lists from 30 days back; type patterns, or more than 20 types, are
// matched by the reconciler instead of types[].
func TestStripeReconcileQuery(t *testing.T) {
	t.Parallel()
	api, srv, _ := stripeEvents(t, 30)
	r := newStripeReconciler(t, srv, &sleeps{}, 0)
	listAll(t, r, provider.ListQuery{Since: stripeNow.Add(-90 * 24 * time.Hour)})
	if got, want := api.Requests()[0].Get("created[gte]"), strconv.FormatInt(stripeNow.Add(-provider.StripeRetention).Unix(), 10); got != want {
		t.Errorf("created[gte]=%s, want %s (30 days back)", got, want)
	}

	pages := listAll(t, r, provider.ListQuery{Since: stripeNow.Add(-time.Hour), Types: []string{"charge.*"}})
	if q := api.Requests()[1]; q.Has("types[]") {
		t.Errorf("a pattern sent as types[]: %v", q)
	}
	if got := ids(pages); len(got) != 10 {
		t.Errorf("charge.*: listed %d, want 10", len(got))
	}
	for _, p := range pages {
		for _, d := range p.Deliveries {
			if !strings.HasPrefix(d.Type, "charge.") {
				t.Errorf("charge.* listed %s", d.Type)
			}
		}
	}

	many := []string{"charge.succeeded"}
	for i := range 20 {
		many = append(many, fmt.Sprintf("other.type%d", i))
	}
	pages = listAll(t, r, provider.ListQuery{Since: stripeNow.Add(-time.Hour), Types: many})
	if q := api.Requests()[2]; q.Has("types[]") {
		t.Errorf("21 types sent as types[]: %v", q)
	}
	if got := ids(pages); len(got) != 10 {
		t.Errorf("21 types: listed %d, want the 10 charge.succeeded", len(got))
	}
}

// TestStripeReconcileKey: the reconciler takes a restricted key only, and
// an absolute API URL.
func TestStripeReconcileKey(t *testing.T) {
	t.Parallel()
	p, _ := provider.Lookup("stripe")
	for _, c := range []provider.ReconcileConfig{
		{},
		{Key: "sk_test_51Secret"},
		{Key: stripeKey, APIURL: "api.stripe.com"},
	} {
		if _, err := p.Reconcile(c); err == nil || strings.Contains(err.Error(), "sk_test_51Secret") {
			t.Errorf("Reconcile(%+v): %v, want an error that shows no key", c.APIURL, err)
		}
	}
	if _, err := p.Reconcile(provider.ReconcileConfig{Key: stripeKey}); err != nil {
		t.Errorf("a restricted key: %v", err)
	}
}
