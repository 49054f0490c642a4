package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/internal/reconcile/stripefake"
)

// rcNodeAPI is the fake Stripe API as several nodes reach it: node i at
// /node<i>, so that the test sees which node made each request.
type rcNodeAPI struct {
	api *stripefake.API

	mu    sync.Mutex
	nodes []string // by request, from the first
}

func (a *rcNodeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	node, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	a.mu.Lock()
	a.nodes = append(a.nodes, node)
	a.mu.Unlock()
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + rest
	a.api.ServeHTTP(w, r2)
}

func (a *rcNodeAPI) byRequest() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.nodes...)
}

// Three nodes on one PostgreSQL database reconcile a source every
// second: only the node that leads runs it, one at a time. The leader is
// killed between two pages of its run; another node takes the lead and
// resumes after the last page stored, and every listed event is stored
// once.
func TestReconcileOneNodeAtATime(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	g := newRCGateway(t, 250, "")
	api := &rcNodeAPI{api: g.api}
	apiSrv := httptest.NewServer(api)
	t.Cleanup(apiSrv.Close)
	arrived, release := g.api.Hold(2)
	defer release()

	db := pooled(t, pgtest.New(t))
	dir := t.TempDir()
	secret, key := writeText(t, "webhook-secret", rcWebhookSecret), writeText(t, "api-key", rcAPIKey)
	ps := make([]*process, 3)
	configs := make([]string, 3)
	for i := range ps {
		cfg := fmt.Sprintf(`listen: 127.0.0.1:0
%ssweep_every: 1s
sources:
  - name: pay
    provider: stripe
    secret: file:%s
    reconcile:
      every: 1s
      api_key: file:%s
      api_url: %s/node%d
      rate: 1000/s
`, nodeDatabase(t, db, i), secret, key, apiSrv.URL, i)
		configs[i] = filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		if err := os.WriteFile(configs[i], []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i := range ps {
		ps[i] = startServe(t, "--config", configs[i])
	}
	<-arrived
	first := api.byRequest()
	if len(first) != 2 || first[0] != first[1] {
		t.Fatalf("the first two requests came from nodes %v, want one node's run", first)
	}
	var leader int
	fmt.Sscanf(first[0], "node%d", &leader)
	ps[leader].cmd.Process.Kill()
	ps[leader].cmd.Wait()
	release()

	g.config = configs[(leader+1)%3]
	eventually(t, "another node completes the run", func() bool {
		return g.reconcile(t).Sources[0].Checkpoint != nil
	})
	reqs, nodes := g.api.Requests(), api.byRequest()
	if reqs[2].Get("starting_after") != g.events[150].ID || reqs[2].Get("created[gte]") != reqs[0].Get("created[gte]") {
		t.Errorf("the new leader's first request %v, want starting_after %s and created[gte] %s",
			reqs[2], g.events[150].ID, reqs[0].Get("created[gte]"))
	}
	for i := 3; i < len(nodes); i++ {
		if nodes[i] != nodes[2] || nodes[2] == first[0] {
			t.Fatalf("requests by node after the kill: %v, want one live node's", nodes[2:])
		}
	}
	stored := g.stored(t)
	if len(stored) != len(g.events) {
		t.Errorf("%d events stored, want %d", len(stored), len(g.events))
	}
	// The leader runs again every second: the last run is the resumed
	// one, which recovered every event, or a later one, which recovered
	// nothing new.
	if pay := g.reconcile(t).Sources[0]; pay.Last == nil || pay.Last.Error != "" ||
		!(pay.Last.Recovered == 250 && pay.Last.Listed == 250 || pay.Last.Recovered == 0 && pay.Last.AlreadyHad == pay.Last.Listed) {
		t.Errorf("the last run: %+v", pay.Last)
	}
}
