package console_test

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/console"
	"github.com/hookgate/hookgate/internal/guard"
)

// from returns a copy of b whose browser connects from the loopback
// address ip, with a cookie jar of its own.
func (b *bundle) from(ip string) *bundle {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	jar, _ := cookiejar.New(nil)
	c := *b
	c.client = &http.Client{Jar: jar, CheckRedirect: b.client.CheckRedirect,
		Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	return &c
}

// postToken posts the sign-in form with tok and returns the status, the
// Retry-After and the page.
func (b *bundle) postToken(tok string) (int, string, string) {
	b.t.Helper()
	form := url.Values{"csrf": {b.csrf(b.get("/ui/login"))}, "token": {tok}}
	resp, err := b.client.PostForm(b.srv.URL+"/ui/login", form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(page)
}

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

// After a few wrong tokens from one address, sign-in answers 429 with
// Retry-After to that address, the right token included, until the block
// ends; another address signs in at once. The failures are logged with
// the address, never the token tried.
func TestSignInIsLimited(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	b := setup(t, console.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	one, two := b.from("127.0.0.1"), b.from("127.0.0.2")
	const guess = "guess-0123456789"
	for range guard.Failures {
		if code, _, _ := one.postToken(guess); code != http.StatusUnauthorized {
			t.Fatalf("wrong token = %d, want 401", code)
		}
	}
	code, retry, page := one.postToken(token)
	if code != http.StatusTooManyRequests || retry != "60" || !strings.Contains(page, "Too many wrong tokens") {
		t.Fatalf("the right token from the blocked address = %d, Retry-After %q, want 429, 60: %.300s", code, retry, page)
	}
	if code, _, _ := two.postToken(token); code != http.StatusSeeOther {
		t.Fatalf("the right token from another address = %d, want 303", code)
	}
	b.clock.Advance(guard.FirstBlock)
	if code, _, _ := one.postToken(token); code != http.StatusSeeOther {
		t.Fatalf("the right token after the block = %d, want 303", code)
	}
	out := log.String()
	if !strings.Contains(out, `what="console sign-in" addr=127.0.0.1 failures=1`) {
		t.Errorf("the log does not name the address and the count:\n%s", out)
	}
	if strings.Contains(out, guess) {
		t.Errorf("the log shows the token tried:\n%s", out)
	}
}

// Signing in over and over keeps at most MaxSessions open: the oldest
// ends first.
func TestSessionsAreCapped(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{})
	first := b.from("127.0.0.1")
	first.signIn()
	b.clock.Advance(time.Second)
	second := b.from("127.0.0.1")
	second.signIn()
	for range console.MaxSessions - 1 {
		b.clock.Advance(time.Second)
		if code, _, _ := b.postToken(token); code != http.StatusSeeOther {
			t.Fatalf("sign in = %d, want 303", code)
		}
	}
	if code, _ := first.do(http.MethodGet, "/ui/", nil); code != http.StatusSeeOther {
		t.Errorf("the oldest of %d sessions = %d, want 303 to the sign-in form", console.MaxSessions+1, code)
	}
	second.get("/ui/")
}
