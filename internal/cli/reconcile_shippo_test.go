package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/reconcile/shippofake"
)

// shippoDelivered names a delivered track_updated webhook by its tracking
// number and status.
func shippoDelivered(body []byte) (string, error) {
	var e struct {
		Data struct {
			Number string `json:"tracking_number"`
			Status struct {
				Status string `json:"status"`
			} `json:"tracking_status"`
		} `json:"data"`
	}
	err := json.Unmarshal(body, &e)
	return e.Data.Number + " " + e.Data.Status.Status, err
}

// Tracking numbers whose updates came as webhooks and numbers whose last
// update Shippo alone knows, mixed: a run asks Shippo about every number
// not in a final status, and no other; the statuses the webhooks brought
// are already had, the missed ones are recovered (via reconcile), applied
// and delivered once; their late webhooks are duplicates, and a rerun
// recovers nothing.
func TestReconcileAsksShippoAboutOpenNumbers(t *testing.T) {
	t.Parallel()
	const (
		secret = "shippo-webhook-secret"
		token  = "shippo_test_reconcile_e2e"
	)
	api := shippofake.New(token)
	g := startRCGateway(t, api, rcSource{name: "ship", provider: "shippo", secret: secret, token: token}, shippoDelivered)
	send := func(tr shippofake.Track, want int) {
		t.Helper()
		if code, err := shippofake.Send(g.intake, secret, tr); err != nil || code != want {
			t.Fatalf("webhook of %s %s: %d %v, want %d", tr.Number, tr.Status, code, err, want)
		}
	}

	now := time.Now().Truncate(time.Second)
	const n = 60
	wantAsked := map[string]bool{}
	wantDelivered := map[string]bool{}
	var missed []shippofake.Track
	for i := range n {
		tr := shippofake.Track{Carrier: "usps", Number: fmt.Sprintf("9205590164917%06d", i), Status: "TRANSIT", StatusDate: now.Add(-time.Hour)}
		send(tr, http.StatusAccepted)
		wantDelivered[tr.Number+" TRANSIT"] = true
		switch {
		case i%6 == 0:
			tr.Status, tr.StatusDate = "DELIVERED", now.Add(-time.Minute)
			send(tr, http.StatusAccepted)
			wantDelivered[tr.Number+" DELIVERED"] = true
		case i%2 == 0:
			tr.Status, tr.StatusDate = "OUT_FOR_DELIVERY", now
			missed = append(missed, tr)
			wantDelivered[tr.Number+" OUT_FOR_DELIVERY"] = true
			wantAsked["/tracks/usps/"+tr.Number] = true
		default:
			wantAsked["/tracks/usps/"+tr.Number] = true
		}
		api.Set(tr)
	}
	// A number of a carrier Shippo does not track: the run counts it
	// failed and goes on.
	pigeon := shippofake.Track{Carrier: "pigeon", Number: "PG0001", Status: "TRANSIT", StatusDate: now.Add(-time.Hour)}
	send(pigeon, http.StatusAccepted)
	wantDelivered[pigeon.Number+" TRANSIT"] = true
	wantAsked["/tracks/pigeon/"+pigeon.Number] = true
	webhooks := n + n/6 + 1
	g.waitStored(t, "the webhooks applied", webhooks)

	open := int64(len(wantAsked))
	rep := g.reconcile(t, "--source", "ship").Sources[0]
	if r := rep.Run; r == nil || r.Listed != open || r.AlreadyHad != open-int64(len(missed))-1 || r.Recovered != int64(len(missed)) ||
		r.Failed != 1 || r.Error != "" {
		t.Fatalf("run: %+v; want %d listed, %d recovered, 1 failed", rep.Run, open, len(missed))
	}
	asked := map[string]int{}
	for _, path := range api.Requests() {
		asked[path]++
	}
	for path, k := range asked {
		if !wantAsked[path] || k != 1 {
			t.Errorf("asked %d times about %s; want once about each open number, never about a delivered one", k, path)
		}
	}
	if len(asked) != len(wantAsked) {
		t.Errorf("asked about %d numbers, want the %d open ones", len(asked), len(wantAsked))
	}
	for _, tr := range missed[:3] {
		send(tr, http.StatusOK)
	}
	g.waitDelivered(t, "every status delivered", len(wantDelivered))
	stored, delivered := g.stored(t), g.sink.counts()
	vias := map[string]int{}
	for _, e := range stored {
		vias[e.Via]++
	}
	if len(stored) != webhooks+len(missed) || vias[inbox.ViaReconcile] != len(missed) {
		t.Errorf("%d events stored, %d via reconcile; want %d, %d", len(stored), vias[inbox.ViaReconcile], webhooks+len(missed), len(missed))
	}
	for k, c := range delivered {
		if !wantDelivered[k] || c != 1 {
			t.Errorf("%s delivered %d times, want once if at all", k, c)
		}
	}
	rerun := g.reconcile(t, "--source", "ship").Sources[0]
	if r := rerun.Run; r == nil || r.Listed != open || r.Recovered != 0 || r.AlreadyHad != open-1 || r.Failed != 1 {
		t.Fatalf("rerun: %+v", rerun.Run)
	}
}
