package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/internal/reconcile/shippofake"
	"github.com/hookgate/hookgate/internal/source"
)

const shippoToken = "shippo_test_reconcile"

// shippoOpen pages open entities as the runner's ListQuery.Open does, in
// id order.
func shippoOpen(open []provider.OpenEntity) func(context.Context, provider.EntityRef, int) ([]provider.OpenEntity, error) {
	return func(_ context.Context, after provider.EntityRef, limit int) ([]provider.OpenEntity, error) {
		var out []provider.OpenEntity
		for _, e := range open {
			if e.ID > after.ID && len(out) < limit {
				out = append(out, e)
			}
		}
		return out, nil
	}
}

// TestShippoReconcileAsksOpenNumbers: each open tracking number is asked
// about with the carrier its event names, 100 a page, with the token as
// Authorization: ShippoToken; each answer is its track_updated webhook,
// keyed as the webhook is and versioned by its status date; a number
// Shippo knows no status of is not listed; a listing resumes from a
// page's Next; a 429 is waited out.
func TestShippoReconcileAsksOpenNumbers(t *testing.T) {
	t.Parallel()
	api := shippofake.New(shippoToken)
	now := time.Now().Truncate(time.Second)
	var open []provider.OpenEntity
	for i := range 151 {
		tr := shippofake.Track{Carrier: "usps", Number: fmt.Sprintf("9205%06d", i), Status: "TRANSIT", StatusDate: now.Add(-time.Hour)}
		open = append(open, provider.OpenEntity{EntityRef: provider.EntityRef{ID: tr.Number}, State: "TRANSIT", Payload: tr.Webhook()})
		if i == 150 {
			continue
		}
		tr.StatusDate = now
		api.Set(tr)
	}
	api.RateLimit(3)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	var s sleeps
	p, _ := provider.Lookup("shippo")
	r, err := p.Reconcile(provider.ReconcileConfig{APIURL: srv.URL, Key: shippoToken, Client: srv.Client(), Sleep: s.sleep})
	if err != nil {
		t.Fatal(err)
	}
	pages := listAll(t, r, provider.ListQuery{Open: shippoOpen(open)})
	got := ids(pages)
	if len(pages) != 2 || pages[0].Next == "" || pages[1].Next != "" || len(got) != 150 || got[0] != "usps/9205000000" {
		t.Fatalf("%d pages (Next %q), %d listed", len(pages), pages[0].Next, len(got))
	}
	if len(s.d) != 1 || s.d[0] != time.Second {
		t.Errorf("waits %v, want the 429's Retry-After of 1s", s.d)
	}
	src, err := source.New(config.Source{Name: "ship", Provider: "shippo", Secret: config.NewSecret("whsec")}, config.Default().Dedupe)
	if err != nil {
		t.Fatal(err)
	}
	d := pages[0].Deliveries[7]
	want := shippofake.Track{Carrier: "usps", Number: "9205000007", Status: "TRANSIT", StatusDate: now}
	listed, err := intake.ListedItems(src, nil, d.Body)
	if err != nil {
		t.Fatal(err)
	}
	webhook, err := intake.ListedItems(src, nil, want.Webhook())
	if err != nil {
		t.Fatal(err)
	}
	if e := listed[0].Event; e.Hash != webhook[0].Event.Hash || e.EntityVersion != now.UTC().Format(time.RFC3339) || !d.State {
		t.Errorf("listed %s: key %s, version %q, state %v; want the webhook's key %s, version %s",
			d.ID, e.EventID, e.EntityVersion, d.State, webhook[0].Event.EventID, now.UTC().Format(time.RFC3339))
	}
	resumed := listAll(t, r, provider.ListQuery{Open: shippoOpen(open), After: pages[0].Next})
	if got := ids(resumed); len(got) != 50 || got[0] != "usps/9205000100" {
		t.Errorf("resumed: %d listed from %v", len(got), got[:1])
	}
	for _, path := range api.Requests() {
		if !strings.HasPrefix(path, "/tracks/usps/9205") {
			t.Errorf("asked %s", path)
		}
	}
}

// TestShippoReconcileRefusals: a token Shippo refuses ends the listing
// with a message that says so; a number Shippo refuses (a carrier it
// does not track), or whose event names no carrier, is listed as failed
// alone, and the numbers after it are asked about.
func TestShippoReconcileRefusals(t *testing.T) {
	t.Parallel()
	api := shippofake.New(shippoToken)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	p, _ := provider.Lookup("shippo")
	now := time.Now().Truncate(time.Second)
	good := shippofake.Track{Carrier: "usps", Number: "9205000003", Status: "TRANSIT", StatusDate: now}
	api.Set(good)
	open := []provider.OpenEntity{
		{EntityRef: provider.EntityRef{ID: "9205000001"}, Payload: []byte(`{"event":"track_updated","data":{"tracking_number":"9205000001"}}`)},
		{EntityRef: provider.EntityRef{ID: "9205000002"}, Payload: shippofake.Track{Carrier: "pigeon", Number: "9205000002"}.Webhook()},
		{EntityRef: provider.EntityRef{ID: good.Number}, Payload: good.Webhook()},
	}

	r, err := p.Reconcile(provider.ReconcileConfig{APIURL: srv.URL, Key: "shippo_test_other", Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	err = r.List(t.Context(), provider.ListQuery{Open: shippoOpen(open)}, func(provider.Page) error { return nil })
	if !errors.Is(err, provider.ErrRefused) || !strings.Contains(err.Error(), "the API token was refused: Invalid token.") {
		t.Errorf("another token: %v, want the token refused", err)
	}

	r, err = p.Reconcile(provider.ReconcileConfig{APIURL: srv.URL, Key: shippoToken, Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	pages := listAll(t, r, provider.ListQuery{Open: shippoOpen(open)})
	if len(pages) != 1 || len(pages[0].Deliveries) != 3 {
		t.Fatalf("%d pages: %+v; want one of three", len(pages), pages)
	}
	ds := pages[0].Deliveries
	for i, want := range []string{"no data.carrier", "GET /tracks/pigeon/9205000002: refused by the provider's API: 404 Not Found: Not found."} {
		if d := ds[i]; d.ID != open[i].ID || !errors.Is(d.Err, provider.ErrRefused) || !strings.Contains(d.Err.Error(), want) {
			t.Errorf("delivery %d: %s %v, want %s failed: %s", i, d.ID, d.Err, open[i].ID, want)
		}
	}
	if d := ds[2]; d.Err != nil || d.ID != "usps/"+good.Number {
		t.Errorf("after two refusals: %s %v, want usps/%s listed", d.ID, d.Err, good.Number)
	}
}
