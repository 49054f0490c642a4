package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/guard"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxsqlite "github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/server"
	"github.com/hookgate/hookgate/internal/spool"
)

const metricsToken = "metrics-token-e2e-0123456789abcdef0123"

// served is a gateway serving real listeners through Serve.
type served struct {
	gw     *server.Server
	public string // http://host:port of the intake listener
	admin  string // of the admin listener; "" without admin.listen
}

// serve starts Serve on loopback listeners for cfg (one Stripe source is
// added) over store (a new SQLite inbox when nil).
func serve(t *testing.T, cfg config.Config, store inbox.Backend) *served {
	t.Helper()
	if store == nil {
		s, err := inboxsqlite.Open(filepath.Join(t.TempDir(), "hookgate.db"), inboxsqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		store = s
	}
	cfg.Sources = []config.Source{{Name: "stripe", Provider: "stripe", Secret: config.NewSecret(stripeSecret),
		ReplayGuard: config.ReplayGuardOff}}
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	ln := listen()
	opts := server.Options{Store: store}
	out := &served{public: "http://" + ln.Addr().String()}
	if cfg.Admin.Listen != "" {
		opts.AdminListener = listen()
		out.admin = "http://" + opts.AdminListener.Addr().String()
	}
	gw, err := server.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	out.gw = gw
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return out
}

// getPath sends GET url with the bearer token (none when "") and returns the
// status and body.
func getPath(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// post sends one signed Stripe event to the public listener.
func (s *served) post(t *testing.T, id string) int {
	t.Helper()
	g := &gateway{url: s.public, src: s.gw.Sources()[0]}
	return g.send(t, charge(id, "charge.succeeded", "ch_"+id, "succeeded", 100, false))
}

// With admin.listen set, /api, /metrics and the console are served on
// the admin listener only; the public listener
// serves intake and the probes and answers 404 for the rest.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Admin.Token = config.NewSecret(adminToken)
	cfg.Admin.Listen = "127.0.0.1:0"
	s := serve(t, cfg, nil)
	if st := s.post(t, "evt_pub"); st != http.StatusAccepted {
		t.Fatalf("intake on the public listener: %d, want 202", st)
	}
	for _, c := range []struct {
		base, path, token string
		want              int
		body              string
	}{
		{s.public, "/api/events", adminToken, http.StatusNotFound, ""},
		{s.public, "/metrics", "", http.StatusNotFound, ""},
		{s.public, "/ui/", "", http.StatusNotFound, ""},
		{s.public, "/healthz", "", http.StatusOK, "ok"},
		{s.public, "/readyz", "", http.StatusOK, "ok"},
		{s.admin, "/api/events", adminToken, http.StatusOK, "evt_pub"},
		{s.admin, "/api/events", "", http.StatusUnauthorized, ""},
		{s.admin, "/metrics", "", http.StatusOK, `hookgate_events_received_total{outcome="accepted",source="stripe"} 1`},
		{s.admin, "/ui/", "", http.StatusOK, "Sign in"}, // the console sends a browser without a session to its sign-in form
		{s.admin, "/healthz", "", http.StatusOK, "ok"},
		{s.admin, "/readyz", "", http.StatusOK, "ok"},
	} {
		st, body := getPath(t, c.base+c.path, c.token)
		if st != c.want || !strings.Contains(body, c.body) {
			t.Errorf("GET %s%s: %d %.200q, want %d with %q", c.base, c.path, st, body, c.want, c.body)
		}
	}
	if resp, err := http.Post(s.admin+"/in/stripe", "application/json", strings.NewReader("{}")); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusNotFound {
		t.Errorf("intake on the admin listener: %d, want 404", resp.StatusCode)
	}
}

// Without admin.listen the operator's routes, the console included,
// share the public listener with intake.
func TestAdminSharesPublicListener(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Admin.Token = config.NewSecret(adminToken)
	cfg.Metrics.Public = true
	s := serve(t, cfg, nil)
	if st := s.post(t, "evt_shared"); st != http.StatusAccepted {
		t.Fatalf("intake: %d, want 202", st)
	}
	for path, want := range map[string]string{"/api/events": "evt_shared", "/metrics": "hookgate_busy_total", "/ui/": "Sign in"} {
		if st, body := getPath(t, s.public+path, adminToken); st != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %.200q, want 200 with %q", path, st, body, want)
		}
	}
}

// metrics.token: /metrics answers 401 without the bearer token or with
// another, on the public listener and on the admin listener alike.
func TestMetricsToken(t *testing.T) {
	t.Parallel()
	for _, listen := range []string{"", "127.0.0.1:0"} {
		cfg := config.Default()
		cfg.Admin.Listen = listen
		cfg.Metrics.Token = config.NewSecret(metricsToken)
		s := serve(t, cfg, nil)
		base := s.public
		if listen != "" {
			base = s.admin
		}
		for token, want := range map[string]int{"": http.StatusUnauthorized, "wrong": http.StatusUnauthorized,
			adminToken: http.StatusUnauthorized, metricsToken: http.StatusOK} {
			st, body := getPath(t, base+"/metrics", token)
			if st != want || (want == http.StatusOK) != strings.Contains(body, "hookgate_busy_total") {
				t.Errorf("admin.listen %q, token %q: %d %.100q, want %d", listen, token, st, body, want)
			}
		}
	}
}

// Guessing metrics.token is limited as guessing the admin token is: after
// guard.Failures wrong tokens from one address, /metrics answers 429 with
// Retry-After, the right token from that address included.
func TestMetricsTokenGuessingIsLimited(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Metrics.Token = config.NewSecret(metricsToken)
	s := serve(t, cfg, nil)
	for i := range guard.Failures {
		if st, _ := getPath(t, s.public+"/metrics", "guessed-metrics-token-0123456789"); st != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, st)
		}
	}
	if st, body := getPath(t, s.public+"/metrics", metricsToken); st != http.StatusTooManyRequests {
		t.Fatalf("right token after %d wrong ones: %d %.100q, want 429", guard.Failures, st, body)
	}
}

// /metrics names every source and destination, so the public listener
// serves it only behind metrics.token or with metrics.public: by default
// it is not served there at all, the admin token does not open it, and
// with admin.listen it is served on the admin listener alone.
func TestMetricsNotPublicByDefault(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		configure     func(*config.Config)
		public, admin int
	}{
		{"default", func(*config.Config) {}, http.StatusNotFound, 0},
		{"metrics.public", func(c *config.Config) { c.Metrics.Public = true }, http.StatusOK, 0},
		{"admin.listen", func(c *config.Config) { c.Admin.Listen = "127.0.0.1:0" }, http.StatusNotFound, http.StatusOK},
	} {
		cfg := config.Default()
		cfg.Admin.Token = config.NewSecret(adminToken)
		c.configure(&cfg)
		s := serve(t, cfg, nil)
		if st, body := getPath(t, s.public+"/metrics", adminToken); st != c.public {
			t.Errorf("%s: public /metrics with the admin token = %d %.100q, want %d", c.name, st, body, c.public)
		}
		if st, body := getPath(t, s.public+"/metrics", ""); st != c.public || (st != http.StatusOK && strings.Contains(body, "stripe")) {
			t.Errorf("%s: public /metrics = %d %.100q, want %d", c.name, st, body, c.public)
		}
		if s.admin != "" {
			if st, _ := getPath(t, s.admin+"/metrics", ""); st != c.admin {
				t.Errorf("%s: admin /metrics = %d, want %d", c.name, st, c.admin)
			}
		}
	}
}

// An admin.listen that cannot be opened stops Serve with the reason, and
// the public listener is closed.
func TestAdminListenInUse(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	store, err := inboxsqlite.Open(filepath.Join(t.TempDir(), "hookgate.db"), inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := config.Default()
	cfg.Admin.Listen = taken.Addr().String()
	spoolPath := withSpool(t, &cfg)
	gw, err := server.New(cfg, server.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	err = gw.Serve(context.Background(), ln)
	if err == nil || !strings.Contains(err.Error(), "admin.listen") {
		t.Fatalf("Serve = %v, want the admin.listen error", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("public listener: Accept = %v, want it closed", err)
	}
	spoolReleased(t, spoolPath)
}

// withSpool turns cfg's on_store_error to spool, into a file of the test's;
// it returns the file's path.
func withSpool(t *testing.T, cfg *config.Config) string {
	t.Helper()
	cfg.Dedupe.OnStoreError = config.OnStoreErrorSpool
	cfg.Dedupe.Spool = filepath.Join(t.TempDir(), "spool.db")
	return cfg.Dedupe.Spool
}

// spoolReleased fails the test unless the spool at path can be opened: a
// gateway that still holds it keeps every other opener out (G4, one node
// per spool).
func spoolReleased(t *testing.T, path string) {
	t.Helper()
	sp, err := spool.Open(context.Background(), path, spool.Options{})
	if err != nil {
		t.Fatalf("the spool is still held: %v", err)
	}
	sp.Close()
}

// Close releases what New opened: the spool's file, which another
// process (or a restarted gateway) takes next.
func TestCloseReleasesTheSpool(t *testing.T) {
	t.Parallel()
	store, err := inboxsqlite.Open(filepath.Join(t.TempDir(), "hookgate.db"), inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := config.Default()
	path := withSpool(t, &cfg)
	gw, err := server.New(cfg, server.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if sp, err := spool.Open(context.Background(), path, spool.Options{}); err == nil {
		sp.Close()
		t.Fatal("a second opener took the spool while the gateway held it")
	}
	gw.Close()
	spoolReleased(t, path)
}

// failingWrites is a real inbox whose writes fail while fail is set; its
// reads, Ping among them, keep answering, as a full disk or a read-only
// database file does.
type failingWrites struct {
	inbox.Backend
	fail atomic.Bool
}

var errDiskFull = errors.New("database or disk is full")

func (f *failingWrites) Accept(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	if f.fail.Load() {
		return nil, errDiskFull
	}
	return f.Backend.Accept(ctx, items)
}

// /readyz is 503 from the first failed write, although Ping answers,
// stays so when writes could succeed again but none was made, and is ok
// again once a write succeeds; each 503 is counted as not_ready.
func TestReadyFollowsWrites(t *testing.T) {
	t.Parallel()
	db, err := inboxsqlite.Open(filepath.Join(t.TempDir(), "hookgate.db"), inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store := &failingWrites{Backend: db}
	cfg := config.Default()
	cfg.Metrics.Public = true
	s := serve(t, cfg, store)
	readyz := func() int {
		st, _ := getPath(t, s.public+"/readyz", "")
		return st
	}
	if st := readyz(); st != http.StatusOK {
		t.Fatalf("/readyz before any write: %d, want 200", st)
	}
	if st := s.post(t, "evt_1"); st != http.StatusAccepted {
		t.Fatalf("first event: %d", st)
	}
	store.fail.Store(true)
	if st := s.post(t, "evt_2"); st != http.StatusServiceUnavailable {
		t.Fatalf("event while writes fail: %d, want 503", st)
	}
	if err := store.Ping(context.Background()); err != nil {
		t.Fatalf("Ping while writes fail: %v, want it to answer", err)
	}
	if st := readyz(); st != http.StatusServiceUnavailable {
		t.Errorf("/readyz while writes fail: %d, want 503", st)
	}
	store.fail.Store(false)
	if st := readyz(); st != http.StatusServiceUnavailable {
		t.Errorf("/readyz before a write succeeded again: %d, want 503", st)
	}
	if st := s.post(t, "evt_2"); st != http.StatusAccepted {
		t.Fatalf("event once writes work: %d, want 202", st)
	}
	if st := readyz(); st != http.StatusOK {
		t.Errorf("/readyz after a write succeeded: %d, want 200", st)
	}
	if _, body := getPath(t, s.public+"/metrics", ""); !strings.Contains(body, `hookgate_busy_total{reason="not_ready"} 2`) {
		t.Errorf("not_ready 503s not counted: %s", grepLines(body, "hookgate_busy_total"))
	}
}

// grepLines returns the lines of text that contain substr.
func grepLines(text, substr string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, substr) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, "; ")
}
