package cli_test

import (
	"net/http"
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
	const (
		secret = "shopify-app-secret"
		token  = "shpat_reconcile_e2e"
		shop   = "acme.myshopify.com"
	)
	api := shopifyfake.New(token)
	g := startRCGateway(t, api, rcSource{name: "shop", provider: "shopify", secret: secret, token: token,
		reconcile: "      shop: " + shop + "\n      resources: [orders]\n"}, nil)

	now := time.Now().Truncate(time.Second)
	var orders []shopifyfake.Object
	for i := range 300 {
		o := shopifyfake.Object{ID: int64(5000 + i), UpdatedAt: now.Add(-time.Duration(300-i) * 10 * time.Second), Closed: i%4 == 0}
		orders = append(orders, o)
		if i%2 == 0 {
			if code, err := shopifyfake.Send(g.intake, secret, shop, "orders/updated", o, 300*time.Millisecond); err != nil || code != http.StatusAccepted {
				t.Fatalf("webhook of order %d: %d %v", o.ID, code, err)
			}
		}
	}
	api.Add("orders", orders...)
	g.waitStored(t, "the webhooks applied", 150)

	rep := g.reconcile(t, "--source", "shop").Sources[0]
	if r := rep.Run; r == nil || r.Listed != 300 || r.AlreadyHad != 150 || r.Recovered != 150 || r.Failed != 0 || r.Error != "" {
		t.Fatalf("run: %+v", rep.Run)
	}
	g.waitDelivered(t, "every order delivered", len(orders))
	stored, delivered := g.stored(t), g.sink.counts()
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
