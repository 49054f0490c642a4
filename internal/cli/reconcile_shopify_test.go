package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/reconcile/shopifyfake"
)

// Orders whose update webhooks came and orders only the shop lists,
// mixed: a run lists every order updated in the window, finds the states
// the webhooks brought already had (their entity holds them, under the
// webhooks' keys), accepts the others as states (via reconcile), which
// are applied and delivered once; a rerun recovers nothing.
func TestReconcileSyncsShopifyStates(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	const (
		secret = "shopify-app-secret"
		token  = "shpat_reconcile_e2e"
		shop   = "acme.myshopify.com"
	)
	api := shopifyfake.New(token)
	apiSrv := httptest.NewServer(api)
	t.Cleanup(apiSrv.Close)
	sink := &rcSink{got: map[string]int{}}
	sinkSrv := httptest.NewServer(sink)
	t.Cleanup(sinkSrv.Close)
	dir := t.TempDir()
	g := &rcGateway{config: filepath.Join(dir, "hookgate.yaml")}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
database: sqlite:%s
workers: 2
sources:
  - name: shop
    provider: shopify
    secret: file:%s
    reconcile:
      token: file:%s
      api_url: %s
      shop: %s
      resources: [orders]
      rate: 1000/s
    destinations:
      - name: sink
        url: %s/hooks
        retry_initial: 100ms
`, filepath.Join(dir, "hookgate.db"), writeText(t, "secret", secret), writeText(t, "token", token), apiSrv.URL, shop, sinkSrv.URL)
	if err := os.WriteFile(g.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	intake := startServe(t, "--config", g.config).addr + "/in/shop"

	now := time.Now().Truncate(time.Second)
	var orders []shopifyfake.Object
	for i := range 300 {
		o := shopifyfake.Object{ID: int64(5000 + i), UpdatedAt: now.Add(-time.Duration(300-i) * 10 * time.Second), Closed: i%4 == 0}
		orders = append(orders, o)
		if i%2 == 0 {
			if code, err := shopifyfake.Send(intake, secret, shop, "orders/updated", o, 300*time.Millisecond); err != nil || code != http.StatusAccepted {
				t.Fatalf("webhook of order %d: %d %v", o.ID, code, err)
			}
		}
	}
	api.Add("orders", orders...)
	eventually(t, "the webhooks applied", func() bool {
		stored := g.stored(t)
		for _, e := range stored {
			if e.Status != inbox.StatusProcessed {
				return false
			}
		}
		return len(stored) == 150
	})

	rep := g.reconcile(t, "--source", "shop").Sources[0]
	if r := rep.Run; r == nil || r.Listed != 300 || r.AlreadyHad != 150 || r.Recovered != 150 || r.Failed != 0 || r.Error != "" {
		t.Fatalf("run: %+v", rep.Run)
	}
	eventually(t, "every order delivered", func() bool {
		for _, e := range g.stored(t) {
			if e.Status != inbox.StatusProcessed {
				return false
			}
		}
		return len(sink.counts()) == len(orders)
	})
	stored, delivered := g.stored(t), sink.counts()
	vias := map[string]int{}
	for _, e := range stored {
		vias[e.Via]++
	}
	if len(stored) != 300 || vias[inbox.ViaReconcile] != 150 {
		t.Errorf("%d events stored, %d via reconcile; want 300, 150", len(stored), vias[inbox.ViaReconcile])
	}
	for _, o := range orders {
		if n := delivered[strconv.FormatInt(o.ID, 10)]; n != 1 {
			t.Errorf("order %d delivered %d times, want once", o.ID, n)
		}
	}
	rerun := g.reconcile(t, "--source", "shop", "--since", "2h").Sources[0]
	if r := rerun.Run; r == nil || r.Listed != 300 || r.Recovered != 0 || r.AlreadyHad != 300 {
		t.Fatalf("rerun: %+v", rerun.Run)
	}
}
