package admin_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/admin"
	"github.com/hookgate/hookgate/internal/guard"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
)

// syncBuffer is a log the server's goroutines write while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// clientFrom returns a client whose connections come from the loopback
// address ip, so that one server sees two client addresses.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// Wrong tokens from one address are answered 429 with a Retry-After that
// doubles with each block up to guard.MaxBlock, even when the right token
// comes from that address meanwhile; another address is served at once;
// the block ends on the clock; the log names the address and the count,
// never the token tried.
func TestWrongTokensAreLimited(t *testing.T) {
	t.Parallel()
	clock := dedupetest.NewClock(time.Now())
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var log syncBuffer
	h, err := admin.New(admin.Options{Store: store, Token: token, Logger: slog.New(slog.NewTextHandler(&log, nil)), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	one, two := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
	const guess = "guessed-token-0123456789"
	call := func(c *http.Client, tok string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/api/stats", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
		}
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	want := func(c *http.Client, tok string, code int, retryAfter string) {
		t.Helper()
		if got, ra := call(c, tok); got != code || ra != retryAfter {
			t.Fatalf("status %d, Retry-After %q; want %d, %q", got, ra, code, retryAfter)
		}
	}

	for range guard.Failures {
		want(one, guess, http.StatusUnauthorized, "")
	}
	want(one, guess, http.StatusTooManyRequests, "60")
	want(one, token, http.StatusTooManyRequests, "60")
	want(two, token, http.StatusOK, "")
	if lines := strings.Count(log.String(), "wrong token"); lines != 1 {
		t.Errorf("%d log lines for %d wrong tokens within a minute, want 1:\n%s", lines, guard.Failures, log.String())
	}

	// After each block one wrong token blocks again, twice as long.
	block := guard.FirstBlock
	for _, next := range []string{"120", "240", "480", "900", "900"} {
		clock.Advance(block)
		want(one, guess, http.StatusUnauthorized, "")
		want(one, guess, http.StatusTooManyRequests, next)
		block, _ = time.ParseDuration(next + "s")
	}
	clock.Advance(block - time.Second)
	want(one, token, http.StatusTooManyRequests, "1")
	clock.Advance(time.Second)
	want(one, token, http.StatusOK, "")
	want(one, guess, http.StatusUnauthorized, "")
	want(one, token, http.StatusOK, "")

	out := log.String()
	if !strings.Contains(out, "addr=127.0.0.1 ") || !strings.Contains(out, "failures=5") || !strings.Contains(out, `what="admin api"`) {
		t.Errorf("the log does not name the address and the count:\n%s", out)
	}
	if strings.Contains(out, guess) || strings.Contains(out, "127.0.0.2") {
		t.Errorf("the log shows the token tried or the other address:\n%s", out)
	}
}
