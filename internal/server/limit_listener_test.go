package server_test

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	inboxsqlite "github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/server"
)

// Issue 9, finding 2: beyond limits.max_connections a connection is
// answered 503 with Retry-After at once (not left in the backlog until the
// sender times out), and a closed connection gives its slot back.
func TestConnectionLimit(t *testing.T) {
	t.Parallel()
	const limit = 4
	cfg := config.Default()
	cfg.Limits.MaxConnections = limit
	store, err := inboxsqlite.Open(filepath.Join(t.TempDir(), "hookgate.db"), inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gw, err := server.New(cfg, server.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- gw.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	addr := ln.Addr().String()

	// get sends GET /healthz on a connection of its own and returns the
	// status line and headers it reads.
	get := func() (string, http.Header) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		resp.Body.Close()
		return resp.Status, resp.Header
	}

	idle := make([]net.Conn, limit)
	for i := range idle {
		if idle[i], err = net.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
		defer idle[i].Close()
	}
	began := time.Now()
	status, h := get()
	if !strings.HasPrefix(status, "503") || h.Get("Retry-After") == "" {
		t.Fatalf("with %d idle connections open: %q Retry-After %q, want 503 with Retry-After", limit, status, h.Get("Retry-After"))
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("the 503 took %v", d)
	}

	for _, c := range idle {
		c.Close()
	}
	// The server sees the closes as it reads; each frees its slot.
	deadline := time.Now().Add(10 * time.Second)
	for status, _ = get(); !strings.HasPrefix(status, "200"); status, _ = get() {
		if time.Now().After(deadline) {
			t.Fatalf("after the idle connections closed: %q, want 200", status)
		}
	}
	// Slots are given back: many more connections than the limit, one
	// after another, all get in.
	for i := range 4 * limit {
		if status, _ := get(); !strings.HasPrefix(status, "200") {
			t.Fatalf("connection %d: %q, want 200 (a slot leaked)", i, status)
		}
	}
	// Each connection turned away is counted under its reason.
	_, body := getPath(t, "http://"+addr+"/metrics", "")
	if n := busyCount(t, body, "connections"); n < 1 {
		t.Errorf("hookgate_busy_total{reason=\"connections\"} = %v, want at least the one 503", n)
	}
	if n := busyCount(t, body, "pending_body"); n != 0 {
		t.Errorf("hookgate_busy_total{reason=\"pending_body\"} = %v, want 0", n)
	}
}

// busyCount reads hookgate_busy_total{reason} from a scrape.
func busyCount(t *testing.T, scrape, reason string) float64 {
	t.Helper()
	prefix := `hookgate_busy_total{reason="` + reason + `"} `
	for line := range strings.Lines(scrape) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in the scrape", prefix)
	return 0
}

// A Salesforce source without a token is open to anyone who knows the
// organization id: the server says so when it starts.
func TestSalesforceWithoutTokenWarns(t *testing.T) {
	t.Parallel()
	store, err := inboxsqlite.Open(filepath.Join(t.TempDir(), "hookgate.db"), inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, tc := range []struct {
		token config.Secret
		warn  bool
	}{{config.Secret{}, true}, {config.NewSecret("sf-token"), false}} {
		cfg := config.Default()
		cfg.Sources = []config.Source{{Name: "sf", Provider: config.ProviderSalesforce,
			OrganizationID: "00D5e000000AbCdEAK", Token: tc.token, ReplayGuard: config.ReplayGuardOff}}
		var logs strings.Builder
		gw, err := server.New(cfg, server.Options{Store: store, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		gw.Close()
		if got := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "source=sf"); got != tc.warn {
			t.Errorf("token set %v: warned %v, want %v; logs:\n%s", !tc.token.IsZero(), got, tc.warn, logs.String())
		}
	}
}
