package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/reconcile/stripefake"
)

const (
	rcWebhookSecret = "whsec_cmVjb25jaWxlLXdlYmhvb2stc2VjcmV0"
	rcAPIKey        = "rk_test_reconcile_e2e"
)

// rcGateway is a serve process's configuration with one source
// reconciled against a fake provider API and delivering to a sink; api
// and events are those of a Stripe source.
type rcGateway struct {
	config string
	api    *stripefake.API
	events []stripefake.Event // oldest first
	sink   *rcSink
	intake string // the source's intake URL, once the gateway serves
}

// rcSink counts the deliveries it gets by the id in their body, or by
// what its name says of the body when set.
type rcSink struct {
	mu   sync.Mutex
	got  map[string]int
	name func(body []byte) (string, error)
}

func (s *rcSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	name := s.name
	if name == nil {
		name = bodyID
	}
	k, err := name(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.got[k]++
	s.mu.Unlock()
}

// bodyID is the id of a JSON body: Stripe's and GitHub's test ids are
// strings, Shopify's numbers.
func bodyID(body []byte) (string, error) {
	var e struct{ ID json.RawMessage }
	err := json.Unmarshal(body, &e)
	return strings.Trim(string(e.ID), `"`), err
}

func (s *rcSink) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.got))
	for k, v := range s.got {
		out[k] = v
	}
	return out
}

// writeRCGateway serves api and a sink that names each delivery by name
// (by the id in its body when nil), and writes the configuration of a
// gateway that config makes of a fresh SQLite database's path, the API's
// URL and the sink's.
func writeRCGateway(t *testing.T, api http.Handler, name func(body []byte) (string, error), config func(db, apiURL, sinkURL string) string) *rcGateway {
	t.Helper()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	g := &rcGateway{sink: &rcSink{got: map[string]int{}, name: name}}
	apiSrv := httptest.NewServer(api)
	t.Cleanup(apiSrv.Close)
	sinkSrv := httptest.NewServer(g.sink)
	t.Cleanup(sinkSrv.Close)
	dir := t.TempDir()
	g.config = filepath.Join(dir, "hookgate.yaml")
	cfg := config(filepath.Join(dir, "hookgate.db"), apiSrv.URL, sinkSrv.URL)
	if err := os.WriteFile(g.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return g
}

// newRCGateway holds n events, one a minute up to now, in a fake Stripe
// API and writes the configuration of a gateway whose source pay
// reconciles with it; extra is added to the reconcile block.
func newRCGateway(t *testing.T, n int, extra string) *rcGateway {
	t.Helper()
	api := stripefake.New(rcAPIKey)
	var events []stripefake.Event
	now := time.Now()
	for i := range n {
		events = append(events, stripefake.Event{ID: fmt.Sprintf("evt_1Rc%05d", i), Type: "charge.succeeded",
			Created: now.Add(-time.Duration(n-i) * time.Minute)})
	}
	api.Add(events...)
	g := writeRCGateway(t, api, nil, func(db, apiURL, sinkURL string) string {
		return fmt.Sprintf(`listen: 127.0.0.1:0
database: %q
workers: 2
lease: 3s
sources:
  - name: pay
    provider: stripe
    secret: file:%s
    reconcile:
      api_key: file:%s
      api_url: %s
      rate: 1000/s
%s    destinations:
      - name: sink
        url: %s/hooks
        timeout: 2s
        retry_initial: 100ms
        retry_max_delay: 1s
`, "sqlite:"+db, writeText(t, "webhook-secret", rcWebhookSecret), writeText(t, "api-key", rcAPIKey), apiURL, extra, sinkURL)
	})
	g.api, g.events = api, events
	return g
}

// rcSource is the one source of a test gateway that reconciles with an
// API by token: its name and provider, its webhook secret and token, and
// the lines its provider adds to the reconcile block.
type rcSource struct {
	name, provider, secret, token, reconcile string
}

// startRCGateway starts a gateway whose one source src reconciles with
// api and delivers to a sink that names each delivery by name (by the id
// in its body when nil).
func startRCGateway(t *testing.T, api http.Handler, src rcSource, name func(body []byte) (string, error)) *rcGateway {
	t.Helper()
	g := writeRCGateway(t, api, name, func(db, apiURL, sinkURL string) string {
		return fmt.Sprintf(`listen: 127.0.0.1:0
database: sqlite:%s
workers: 2
sources:
  - name: %s
    provider: %s
    secret: file:%s
    reconcile:
      token: file:%s
      api_url: %s
%s      rate: 1000/s
    destinations:
      - name: sink
        url: %s/hooks
        retry_initial: 100ms
`, db, src.name, src.provider, writeText(t, "secret", src.secret), writeText(t, "token", src.token), apiURL, src.reconcile, sinkURL)
	})
	g.intake = startServe(t, "--config", g.config).addr + "/in/" + src.name
	return g
}

// webhook sends e to the gateway as Stripe's webhook would, signed, and
// returns the status.
func (g *rcGateway) webhook(t *testing.T, e stripefake.Event) int {
	t.Helper()
	code, err := stripefake.Send(g.intake, rcWebhookSecret, e)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// waitStored waits until the gateway stored n events and processed each.
func (g *rcGateway) waitStored(t *testing.T, what string, n int) {
	t.Helper()
	g.waitProcessed(t, what, func(stored int) bool { return stored == n })
}

// waitDelivered waits until the gateway processed every event it stored
// and the sink got n different deliveries.
func (g *rcGateway) waitDelivered(t *testing.T, what string, n int) {
	t.Helper()
	g.waitProcessed(t, what, func(int) bool { return len(g.sink.counts()) == n })
}

// waitProcessed waits until the gateway processed every event it stored
// and done holds of how many it stored.
func (g *rcGateway) waitProcessed(t *testing.T, what string, done func(stored int) bool) {
	t.Helper()
	eventually(t, what, func() bool {
		stored := g.stored(t)
		for _, e := range stored {
			if e.Status != inbox.StatusProcessed {
				return false
			}
		}
		return done(len(stored))
	})
}

// rcReport is the JSON of `hookgate reconcile`, as far as these tests
// read it.
type rcReport struct {
	Sources []struct {
		Source      string     `json:"source"`
		Checkpoint  *time.Time `json:"checkpoint"`
		Run         *rcRun     `json:"run"`
		Last        *rcRun     `json:"last"`
		Interrupted *rcRun     `json:"interrupted"`
	} `json:"sources"`
}

type rcRun struct {
	Since       *time.Time `json:"since"`
	Listed      int64      `json:"listed"`
	AlreadyHad  int64      `json:"already_had"`
	Recovered   int64      `json:"recovered"`
	Failed      int64      `json:"failed"`
	Error       string     `json:"error"`
	ResumeAfter string     `json:"resume_after"`
}

// reconcile runs `hookgate reconcile --config ... args... --json` in a
// process of its own and returns the report of its one source.
func (g *rcGateway) reconcile(t *testing.T, args ...string) rcReport {
	t.Helper()
	cmd := command(t, append([]string{"reconcile", "--config", g.config, "--json"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hookgate reconcile %v: %v\n%s", args, err, stderr.String())
	}
	var rep rcReport
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Sources) != 1 {
		t.Fatalf("report %s: %v", out, err)
	}
	return rep
}

// stored returns the gateway's events by Stripe event id, failing on an
// event stored twice.
func (g *rcGateway) stored(t *testing.T) map[string]rcEvent {
	t.Helper()
	var out bytes.Buffer
	var errb bytes.Buffer
	if err := cli.Run(t.Context(), []string{"events", "list", "--config", g.config, "--json", "--limit", "10000"}, nil, &out, &errb); err != nil {
		t.Fatalf("events list: %v\n%s", err, errb.String())
	}
	got := map[string]rcEvent{}
	lines := bufio.NewScanner(&out)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var e rcEvent
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			t.Fatalf("events list line %s: %v", lines.Text(), err)
		}
		if _, twice := got[e.EventID]; twice {
			t.Errorf("%s is stored twice", e.EventID)
		}
		got[e.EventID] = e
	}
	return got
}

type rcEvent struct {
	EventID string       `json:"event_id"`
	Via     string       `json:"via"`
	Status  inbox.Status `json:"status"`
}

// Events sent as webhooks and events only the provider lists, mixed: a
// reconciliation lists them all, finds the webhooks' copies already had,
// recovers the others (marked via reconcile) and moves the checkpoint;
// the late webhooks of recovered events are duplicates, every event is
// stored and delivered once, and a rerun recovers nothing.
func TestReconcileRecoversMissedStripeEvents(t *testing.T) {
	t.Parallel()
	g := newRCGateway(t, 120, "")
	g.intake = startServe(t, "--config", g.config).addr + "/in/pay"
	for i, e := range g.events {
		if i%2 == 0 {
			if st := g.webhook(t, e); st != http.StatusAccepted {
				t.Fatalf("webhook %s: %d, want 202", e.ID, st)
			}
		}
	}
	before := time.Now().Truncate(time.Second)
	rep := g.reconcile(t, "--source", "pay")
	pay := rep.Sources[0]
	if r := pay.Run; r == nil || r.Listed != 120 || r.AlreadyHad != 60 || r.Recovered != 60 || r.Failed != 0 || r.Error != "" {
		t.Fatalf("run: %+v", pay.Run)
	}
	if pay.Checkpoint == nil || pay.Checkpoint.Before(before) {
		t.Fatalf("checkpoint %v, want the run's start, after %v", pay.Checkpoint, before)
	}
	for _, e := range g.events {
		if st := g.webhook(t, e); st != http.StatusOK {
			t.Errorf("late webhook %s: %d, want 200 (duplicate)", e.ID, st)
		}
	}
	g.waitDelivered(t, "every event delivered", len(g.events))
	stored, delivered := g.stored(t), g.sink.counts()
	for i, e := range g.events {
		want := ""
		if i%2 == 1 {
			want = inbox.ViaReconcile
		}
		if s, ok := stored[e.ID]; !ok || s.Via != want {
			t.Errorf("%s: stored %v via %q, want via %q", e.ID, ok, s.Via, want)
		}
		if delivered[e.ID] != 1 {
			t.Errorf("%s delivered %d times, want once", e.ID, delivered[e.ID])
		}
	}
	if len(stored) != len(g.events) {
		t.Errorf("%d events stored, want %d", len(stored), len(g.events))
	}

	rerun := g.reconcile(t, "--source", "pay").Sources[0]
	if r := rerun.Run; r == nil || r.Recovered != 0 || r.AlreadyHad != r.Listed || r.Since == nil ||
		!r.Since.Equal(pay.Checkpoint.Add(-15*time.Minute)) {
		t.Fatalf("rerun: %+v, want nothing recovered, listed since the checkpoint %v less the overlap", rerun.Run, pay.Checkpoint)
	}
	if !rerun.Checkpoint.After(*pay.Checkpoint) && !rerun.Checkpoint.Equal(*pay.Checkpoint) {
		t.Errorf("checkpoint went back: %v then %v", pay.Checkpoint, rerun.Checkpoint)
	}
}

// A serve process killed between two pages of its scheduled run keeps the
// first page and the run's cursor; restarted, it resumes after that page,
// with the same window, and the run completes with every event stored
// once.
func TestReconcileResumesAfterACrash(t *testing.T) {
	t.Parallel()
	g := newRCGateway(t, 250, "      every: 1h\n")
	arrived, release := g.api.Hold(2)
	p := startServe(t, "--config", g.config)
	<-arrived
	p.cmd.Process.Kill()
	p.cmd.Wait()
	release()

	pay := g.reconcile(t).Sources[0]
	// Newest first: the first page is the 100 newest events.
	if pay.Checkpoint != nil || pay.Interrupted == nil || pay.Interrupted.ResumeAfter != g.events[150].ID ||
		pay.Interrupted.Recovered != 100 {
		t.Fatalf("after the crash: checkpoint %v, interrupted %+v", pay.Checkpoint, pay.Interrupted)
	}
	if n := len(g.stored(t)); n != 100 {
		t.Fatalf("%d events stored after the crash, want the first page's 100", n)
	}

	startServe(t, "--config", g.config)
	eventually(t, "the resumed run completes", func() bool {
		return g.reconcile(t).Sources[0].Checkpoint != nil
	})
	reqs := g.api.Requests()
	if len(reqs) < 3 || reqs[2].Get("starting_after") != g.events[150].ID || reqs[2].Get("created[gte]") != reqs[0].Get("created[gte]") {
		t.Fatalf("the restarted node's first request %v, want starting_after %s and created[gte] %s",
			reqs[min(2, len(reqs)-1)], g.events[150].ID, reqs[0].Get("created[gte]"))
	}
	pay = g.reconcile(t).Sources[0]
	if pay.Last == nil || pay.Last.Listed != 250 || pay.Last.Recovered != 250 || pay.Interrupted != nil {
		t.Fatalf("after the resumed run: last %+v, interrupted %+v", pay.Last, pay.Interrupted)
	}
	stored := g.stored(t)
	for _, e := range g.events {
		if stored[e.ID].Via != inbox.ViaReconcile {
			t.Errorf("%s: stored via %q", e.ID, stored[e.ID].Via)
		}
	}
	if len(stored) != len(g.events) {
		t.Errorf("%d events stored, want %d", len(stored), len(g.events))
	}
}

// A dry run lists and counts, stores nothing and leaves no checkpoint;
// the text report then shows the source with no run, and after a real
// run what it listed and recovered.
func TestReconcileDryRunAndReport(t *testing.T) {
	t.Parallel()
	g := newRCGateway(t, 30, "")
	dry := g.reconcile(t, "--source", "pay", "--dry-run", "--since", "1h").Sources[0]
	if dry.Run == nil || dry.Run.Listed != 30 || dry.Run.Recovered != 30 || dry.Checkpoint != nil || dry.Last != nil {
		t.Fatalf("dry run: %+v, checkpoint %v, last %+v", dry.Run, dry.Checkpoint, dry.Last)
	}
	if n := len(g.stored(t)); n != 0 {
		t.Fatalf("a dry run stored %d events", n)
	}
	text := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if err := cli.Run(t.Context(), append([]string{"reconcile", "--config", g.config}, args...), nil, &out, &errb); err != nil {
			t.Fatalf("reconcile %v: %v\n%s", args, err, errb.String())
		}
		return out.String()
	}
	if out := text(); !strings.Contains(out, "source pay (stripe)") || !strings.Contains(out, "checkpoint  -") || strings.Contains(out, "last run") {
		t.Errorf("report before any run:\n%s", out)
	}
	out := text("--source", "pay")
	for _, want := range []string{`this run +started`, `listed +30 +what the provider says it sent`,
		`already had +0 +their webhook came`, `recovered +30 +no webhook came: accepted, via reconcile`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("report of a run lacks %q:\n%s", want, out)
		}
	}
}
