package provider_test

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/internal/reconcile/shopifyfake"
	"github.com/hookgate/hookgate/internal/source"
)

const (
	shopifyToken = "shpat_reconcile_test"
	shopifyShop  = "acme.myshopify.com"
)

func newShopifyReconciler(t *testing.T, srv *httptest.Server, s *sleeps, resources ...string) provider.Reconciler {
	t.Helper()
	p, _ := provider.Lookup("shopify")
	r, err := p.Reconcile(provider.ReconcileConfig{APIURL: srv.URL, Key: shopifyToken, Shop: shopifyShop,
		Resources: resources, Client: srv.Client(), Sleep: s.sleep})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestShopifyReconcileListsStates: each resource's objects updated since
// the checkpoint are listed (orders of any status), 250 a page by the
// Link header's page_info (sent alone), resource after resource; each is
// its update webhook's state, keyed the same on every listing while its
// updated_at stays, with a new key once it changes, versioned by
// updated_at; a listing resumes from a page's Next; a 429's Retry-After
// of "2.0" is waited out.
func TestShopifyReconcileListsStates(t *testing.T) {
	t.Parallel()
	api := shopifyfake.New(shopifyToken)
	now := time.Now().Truncate(time.Second)
	for i := range 300 {
		api.Add("orders", shopifyfake.Object{ID: int64(1000 + i), UpdatedAt: now.Add(-time.Duration(300-i) * time.Minute), Closed: i%3 == 0})
	}
	api.Add("products", shopifyfake.Object{ID: 7, UpdatedAt: now.Add(-time.Minute)}, shopifyfake.Object{ID: 8, UpdatedAt: now.Add(-48 * time.Hour)})
	api.RateLimit(2)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	var s sleeps
	r := newShopifyReconciler(t, srv, &s, "orders", "products")
	since := now.Add(-280 * time.Minute)
	pages := listAll(t, r, provider.ListQuery{Since: since})
	got := ids(pages)
	if len(got) != 281 || got[0] != "orders/1020" || got[279] != "orders/1299" || got[280] != "products/7" {
		t.Fatalf("listed %d: %v … %v", len(got), got[:2], got[len(got)-2:])
	}
	if len(pages) != 3 || pages[0].Next == "" || !strings.HasPrefix(pages[1].Next, "products ") || pages[2].Next != "" {
		t.Errorf("pages' Next: %q %q %q", pages[0].Next, pages[1].Next, pages[2].Next)
	}
	reqs := api.Requests()
	if len(reqs) != 4 || !strings.Contains(reqs[0], "status=any") || !strings.Contains(reqs[0], "limit=250") ||
		!strings.Contains(reqs[0], "updated_at_min="+strings.ReplaceAll(since.UTC().Format(time.RFC3339), ":", "%3A")) ||
		!strings.Contains(reqs[2], "page_info=") || strings.Contains(reqs[2], "updated_at_min") || !strings.Contains(reqs[3], "/products.json?") {
		t.Errorf("requests %v", reqs)
	}
	if !slices.Equal(s.d, []time.Duration{2 * time.Second}) {
		t.Errorf("waited %v after a 429 with Retry-After: 2.0", s.d)
	}

	src, err := source.New(config.Source{Name: "shop", Provider: "shopify", Secret: config.NewSecret("app-secret")}, config.Default().Dedupe)
	if err != nil {
		t.Fatal(err)
	}
	d := pages[0].Deliveries[0]
	items, err := intake.ListedItems(src, d.Header, d.Body)
	if err != nil || len(items) != 1 {
		t.Fatalf("keying %s: %v %v", d.ID, items, err)
	}
	e := items[0].Event
	if !d.State || e.Tenant != shopifyShop || e.Type != "orders/updated" || e.EntityType != "orders" || e.EntityID != "1020" ||
		e.EntityVersion != now.Add(-280*time.Minute).Format(time.RFC3339) {
		t.Errorf("the state of orders/1020: %+v", e)
	}
	again := listAll(t, r, provider.ListQuery{Since: since})
	if a := again[0].Deliveries[0]; a.Header.Get("X-Shopify-Webhook-Id") != d.Header.Get("X-Shopify-Webhook-Id") {
		t.Errorf("listed again, the same state has webhook id %s, then %s", d.Header.Get("X-Shopify-Webhook-Id"), a.Header.Get("X-Shopify-Webhook-Id"))
	}
	api.Add("orders", shopifyfake.Object{ID: 1020, UpdatedAt: now})
	updated := listAll(t, r, provider.ListQuery{Since: since})
	for _, u := range updated[0].Deliveries {
		if u.ID == "orders/1020" && u.Header.Get("X-Shopify-Webhook-Id") == d.Header.Get("X-Shopify-Webhook-Id") &&
			u.Header.Get("X-Shopify-Triggered-At") != d.Header.Get("X-Shopify-Triggered-At") {
			t.Errorf("a newer state of orders/1020 has the older one's webhook id")
		}
	}

	resumed := listAll(t, r, provider.ListQuery{Since: since, After: pages[1].Next})
	if got := ids(resumed); !slices.Equal(got, []string{"products/7"}) {
		t.Errorf("resumed after the orders: %v", got)
	}
}

// TestShopifyReconcileConfig: the shop is a myshopify.com domain, the
// resources known ones, the API version one of Shopify's.
func TestShopifyReconcileConfig(t *testing.T) {
	t.Parallel()
	p, _ := provider.Lookup("shopify")
	for _, c := range []struct {
		cfg  provider.ReconcileConfig
		want string
	}{
		{provider.ReconcileConfig{Resources: []string{"orders"}}, "shop: required"},
		{provider.ReconcileConfig{Shop: "https://acme.myshopify.com", Resources: []string{"orders"}}, `shop: "https://acme.myshopify.com": want`},
		{provider.ReconcileConfig{Shop: "shop.acme.com", Resources: []string{"orders"}}, `shop: "shop.acme.com": want`},
		{provider.ReconcileConfig{Shop: shopifyShop}, "resources: required"},
		{provider.ReconcileConfig{Shop: shopifyShop, Resources: []string{"orders", "refunds"}}, `resources[1]: "refunds": want one of custom_collections, customers, orders`},
		{provider.ReconcileConfig{Shop: shopifyShop, Resources: []string{"orders", "orders"}}, `resources[1]: "orders" is listed twice`},
		{provider.ReconcileConfig{Shop: shopifyShop, Resources: []string{"orders"}, APIVersion: "2025-11"}, `api_version: "2025-11": want`},
	} {
		c.cfg.Key = shopifyToken
		if _, err := p.Reconcile(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	if _, err := p.Reconcile(provider.ReconcileConfig{Key: shopifyToken, Shop: shopifyShop, Resources: []string{"orders", "products"}, APIVersion: "2025-07"}); err != nil {
		t.Errorf("a valid block: %v", err)
	}
}
