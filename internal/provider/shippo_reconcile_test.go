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
// with a message that says so; so does an open entity whose event names
// no carrier.
func TestShippoReconcileRefusals(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(shippofake.New(shippoToken))
	t.Cleanup(srv.Close)
	p, _ := provider.Lookup("shippo")
	tr := shippofake.Track{Carrier: "usps", Number: "9205000001", Status: "TRANSIT", StatusDate: time.Now()}
	for _, c := range []struct {
		name, key string
		payload   []byte
		want      string
	}{
		{"token", "shippo_test_other", tr.Webhook(), "the API token was refused: Invalid token."},
		{"no carrier", shippoToken, []byte(`{"event":"track_updated","data":{"tracking_number":"9205000001"}}`), "no data.carrier"},
	} {
		r, err := p.Reconcile(provider.ReconcileConfig{APIURL: srv.URL, Key: c.key, Client: srv.Client()})
		if err != nil {
			t.Fatal(err)
		}
		open := []provider.OpenEntity{{EntityRef: provider.EntityRef{ID: tr.Number}, Payload: c.payload}}
		err = r.List(t.Context(), provider.ListQuery{Open: shippoOpen(open)}, func(provider.Page) error { return nil })
		if !errors.Is(err, provider.ErrRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want refused: %s", c.name, err, c.want)
		}
	}
}
