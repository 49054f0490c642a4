package server_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
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

// Issue 9, finding 2: beyond limits.max_connections, with every
// connection in a request, a connection is answered 503 with Retry-After
// at once (not left in the backlog until the sender times out), and a
// closed connection gives its slot back.
func TestConnectionLimit(t *testing.T) {
	t.Parallel()
	const limit = 4
	addr := serveLimited(t, limit)

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

	// Connections in a request (its headers under way) are never closed
	// to make room.
	busy := make([]net.Conn, limit)
	for i := range busy {
		busy[i], _ = inRequest(t, addr)
		defer busy[i].Close()
	}
	status, h := get()
	if !strings.HasPrefix(status, "503") || h.Get("Retry-After") == "" {
		t.Fatalf("with %d connections in a request: %q Retry-After %q, want 503 with Retry-After", limit, status, h.Get("Retry-After"))
	}

	for _, c := range busy {
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

// inRequest opens a connection to addr and starts a request whose
// handler waits for its body: once the 100 Continue is read, the server
// has it in a request. finish sends the body and reads the answer.
func inRequest(t *testing.T, addr string) (c net.Conn, finish func() int) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("POST /in/stripe HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, "100 Continue") {
		t.Fatalf("waiting for 100 Continue: %q %v", line, err)
	}
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Time{})
	return c, func() int {
		t.Helper()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("{}")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
}

// Issue 9, finding 2: thousands of idle connections locked senders out.
// At the limit, a new connection is served by closing the connection idle
// longest: after a keep-alive request, or opened and silent; the ones in
// a request are kept.
func TestIdleConnectionsMakeRoom(t *testing.T) {
	t.Parallel()
	const limit = 4
	addr := serveLimited(t, limit)
	// One connection in a request, then, oldest first, a silent one and
	// two idle after a keep-alive request.
	active, finish := inRequest(t, addr)
	defer active.Close()
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var keepAlive [2]net.Conn
	var readers [2]*bufio.Reader
	for i := range keepAlive {
		if keepAlive[i], err = net.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
		defer keepAlive[i].Close()
		readers[i] = bufio.NewReader(keepAlive[i])
		if status := request(t, keepAlive[i], readers[i]); !strings.HasPrefix(status, "200") {
			t.Fatalf("keep-alive request %d: %q", i, status)
		}
	}
	// waitClosed fails unless the server closes c (a read sees EOF).
	waitClosed := func(what string, c net.Conn, r io.Reader) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := r.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
			t.Fatalf("%s: read %d, %v; want it closed by the server", what, n, err)
		}
	}
	for i, want := range []struct {
		what string
		c    net.Conn
		r    io.Reader
	}{{"the silent connection", silent, silent}, {"the first keep-alive connection", keepAlive[0], readers[0]},
		{"the second keep-alive connection", keepAlive[1], readers[1]}} {
		fresh, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		if status := request(t, fresh, bufio.NewReader(fresh)); !strings.HasPrefix(status, "200") {
			t.Fatalf("new connection %d at the limit: %q, want 200", i, status)
		}
		waitClosed(want.what, want.c, want.r)
	}
	// The connection in a request was kept: it completes its request
	// (401: it is unsigned).
	if st := finish(); st != http.StatusUnauthorized {
		t.Fatalf("the connection in a request: %d, want its 401", st)
	}
	// Each close is counted: the three above, and a fourth for the scrape's
	// own connection, which finds the limit taken.
	_, body := getPath(t, "http://"+addr+"/metrics", "")
	if !strings.Contains(body, "hookgate_idle_connections_closed_total 4\n") {
		t.Errorf("idle connections closed: %s, want 4", grepLines(body, "hookgate_idle_connections_closed_total"))
	}
	if n := busyCount(t, body, "connections"); n != 0 {
		t.Errorf("hookgate_busy_total{reason=\"connections\"} = %v, want 0: nobody was turned away", n)
	}
}

// Issue 19, section 1: connections that each declare a small body and
// send a byte of it now and then held every slot until the read timeout,
// and a real sender was turned away. At the limit with none idle, the
// connection whose body is furthest behind limits.min_body_rate is closed
// to make room, so the sender is served at once.
func TestSlowSmallBodiesMakeRoom(t *testing.T) {
	t.Parallel()
	const limit = 20
	cfg := config.Default()
	cfg.Limits.MaxConnections = limit
	// Long enough that no slow body is answered 408 during the test:
	// only making room closes them.
	cfg.Limits.BodyGrace = config.Duration(time.Minute)
	cfg.Metrics.Public = true
	srv := serve(t, cfg, nil)
	addr := strings.TrimPrefix(srv.public, "http://")
	// Every slot but one is taken by a body that has begun (the server
	// asked for it with 100 Continue) and sent one byte of its two, the
	// last by a connection just opened and silent: idle, but owing less
	// than any of the bodies, so it is kept.
	for range limit - 1 {
		c, _ := inRequest(t, addr)
		defer c.Close()
		if _, err := c.Write([]byte("{")); err != nil {
			t.Fatal(err)
		}
	}
	quiet, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	if code, err := sendSigned(srv, "evt_slowsmall"); err != nil || code != http.StatusAccepted {
		t.Fatalf("a sender on a new connection while slow bodies hold every slot: %d %v, want 202", code, err)
	}
	if status := request(t, quiet, bufio.NewReader(quiet)); !strings.HasPrefix(status, "200") {
		t.Fatalf("the connection opened last: %q, want 200 (a slow body closed, not it)", status)
	}
	_, scrape := getPath(t, srv.public+"/metrics", "")
	if n := metricValue(t, scrape, "hookgate_slow_bodies_closed_total"); n < 1 {
		t.Errorf("hookgate_slow_bodies_closed_total = %v, want at least the one that made room", n)
	}
}

// sendSigned posts a signed Stripe event with the given id to srv's
// stripe source on a new connection and returns the answer's status.
func sendSigned(srv *served, id string) (int, error) {
	body := []byte(`{"id":"` + id + `","object":"event","type":"charge.succeeded","created":1,"data":{"object":{"id":"ch_1"}}}`)
	req, err := http.NewRequest(http.MethodPost, srv.public+"/in/stripe", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	if err := srv.gw.Sources()[0].Signer().Sign(req, body); err != nil {
		return 0, err
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// A body nobody reads (an unknown source or path) is not read by the
// server either: it is answered at once and its connection closed, so
// small bodies trickling to a wrong path cannot hold the slots for the
// read timeout, where making room cannot reach them, and lock senders
// out.
func TestUnreadSlowBodiesLeave(t *testing.T) {
	t.Parallel()
	const limit = 20
	cfg := config.Default()
	cfg.Limits.MaxConnections = limit
	cfg.Limits.BodyGrace = config.Duration(time.Minute)
	srv := serve(t, cfg, nil)
	addr := strings.TrimPrefix(srv.public, "http://")
	paths := []string{"/in/nosuch", "/nowhere"}
	for i := range limit {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("POST " + paths[i%len(paths)] + " HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("a trickling body to %s: %v, want an answer at once", paths[i%len(paths)], err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusNotFound || !resp.Close {
			t.Fatalf("a trickling body to %s: %d %v, closing %v; want 404 and the connection closed", paths[i%len(paths)], resp.StatusCode, err, resp.Close)
		}
		if _, err := r.ReadByte(); err != io.EOF {
			t.Fatalf("after the answer to %s: %v, want the connection closed", paths[i%len(paths)], err)
		}
	}
	// The server closes its side a moment after the answer; a sender that
	// comes in that moment may be told to retry.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, err := sendSigned(srv, "evt_unread")
		if err == nil && code == http.StatusAccepted {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a sender after the trickling bodies were answered: %d %v, want 202", code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metricValue reads an unlabelled series from a scrape.
func metricValue(t *testing.T, scrape, name string) float64 {
	t.Helper()
	for line := range strings.Lines(scrape) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in the scrape", name)
	return 0
}

// serveLimited serves a gateway with limits.max_connections = limit on a
// loopback port and returns its address. limits.min_body_rate is off: a
// connection waiting for its body is in a request like any other, never
// closed to make room (TestSlowSmallBodiesMakeRoom has the rate on).
func serveLimited(t *testing.T, limit int) string {
	t.Helper()
	cfg := config.Default()
	cfg.Limits.MaxConnections = limit
	cfg.Limits.MinBodyRate = 0
	cfg.Metrics.Public = true
	return strings.TrimPrefix(serve(t, cfg, nil).public, "http://")
}

// request sends GET /healthz on c, keeping it open, and returns the
// status line of the answer.
func request(t *testing.T, c net.Conn, r *bufio.Reader) string {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Status
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
		cfg.Sources = []config.Source{{Name: "sf", Provider: "salesforce",
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
