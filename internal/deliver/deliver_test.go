package deliver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/verify"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// received is what a test destination saw of one request.
type received struct {
	header http.Header
	body   []byte
	err    error // of verifying the signature
}

// destination starts a server answering with h after recording each
// request (and checking its signature) on the returned channel.
func destination(t *testing.T, h http.HandlerFunc) (string, <-chan received) {
	t.Helper()
	v, err := verify.NewStandard(secret)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan received, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- received{header: r.Header.Clone(), body: body, err: v.Verify(r, body)}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

func signer(t *testing.T) *verify.Standard {
	t.Helper()
	s, err := verify.NewStandard(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newClient(t *testing.T) *deliver.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return deliver.New(&http.Client{Transport: tr})
}

var msg = deliver.Message{
	WebhookID: "0123456789abcdef0123456789abcdef",
	Payload:   []byte(`{"id":"evt_1"}`),
	Headers:   map[string]string{"X-Hookgate-Source": "stripe", "X-Hookgate-Event-Id": "evt_1"},
}

func TestDeliverSignedMessage(t *testing.T) {
	t.Parallel()
	url, got := destination(t, status(http.StatusNoContent))
	out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url, Signer: signer(t)}, msg)
	if !out.Delivered || out.Retryable || out.Code != http.StatusNoContent || out.Err != nil {
		t.Fatalf("outcome = %+v, want delivered with 204", out)
	}
	r := <-got
	if r.err != nil {
		t.Errorf("signature does not verify: %v", r.err)
	}
	if id := r.header.Get(verify.HeaderWebhookID); id != msg.WebhookID {
		t.Errorf("webhook-id = %q, want %q", id, msg.WebhookID)
	}
	if string(r.body) != string(msg.Payload) {
		t.Errorf("body = %q, want %q", r.body, msg.Payload)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json by default", ct)
	}
	for k, v := range msg.Headers {
		if r.header.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, r.header.Get(k), v)
		}
	}
}

func TestDeliverUnsigned(t *testing.T) {
	t.Parallel()
	url, got := destination(t, status(http.StatusOK))
	m := msg
	m.ContentType = "text/xml; charset=utf-8"
	out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url}, m)
	if !out.Delivered {
		t.Fatalf("outcome = %+v, want delivered", out)
	}
	r := <-got
	if r.header.Get(verify.HeaderWebhookSignature) != "" {
		t.Errorf("unsigned destination got webhook-signature %q", r.header.Get(verify.HeaderWebhookSignature))
	}
	if id := r.header.Get(verify.HeaderWebhookID); id != msg.WebhookID {
		t.Errorf("webhook-id = %q, want %q", id, msg.WebhookID)
	}
	if ct := r.header.Get("Content-Type"); ct != m.ContentType {
		t.Errorf("Content-Type = %q, want %q", ct, m.ContentType)
	}
}

func TestDeliverClassifies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code      int
		delivered bool
		retryable bool
	}{
		{200, true, false},
		{202, true, false},
		{204, true, false},
		{304, false, false},
		{400, false, false},
		{401, false, false},
		{404, false, false},
		{410, false, false},
		{422, false, false},
		{408, false, true},
		{429, false, true},
		{500, false, true},
		{502, false, true},
		{503, false, true},
	} {
		t.Run(http.StatusText(tc.code), func(t *testing.T) {
			t.Parallel()
			url, _ := destination(t, func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.code)
				io.WriteString(w, "  the reason  ")
			})
			out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url}, msg)
			if out.Delivered != tc.delivered || out.Retryable != tc.retryable || out.Code != tc.code {
				t.Fatalf("outcome = %+v, want delivered %v retryable %v code %d", out, tc.delivered, tc.retryable, tc.code)
			}
			if tc.delivered {
				if out.Err != nil {
					t.Errorf("delivered with error %v", out.Err)
				}
				return
			}
			if out.Err == nil || !strings.Contains(out.Err.Error(), "app") {
				t.Fatalf("error %v should name the destination", out.Err)
			}
			if tc.code != http.StatusNotModified && !strings.Contains(out.Err.Error(), ": the reason") {
				t.Errorf("error %v should quote the trimmed body", out.Err)
			}
		})
	}
}

func TestDeliverErrorSnippetIsShort(t *testing.T) {
	t.Parallel()
	url, _ := destination(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, strings.Repeat("x", 10000))
	})
	out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url}, msg)
	if out.Err == nil || len(out.Err.Error()) > 400 {
		t.Fatalf("error is %d bytes, want a short snippet: %.80v", len(out.Err.Error()), out.Err)
	}
}

func TestDeliverRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		value    string
		min, max time.Duration
	}{
		{"seconds", "120", 120 * time.Second, 120 * time.Second},
		{"date", time.Now().Add(2 * time.Hour).UTC().Format(http.TimeFormat), time.Hour, 2 * time.Hour},
		{"absent", "", 0, 0},
		{"malformed", "soon", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, _ := destination(t, func(w http.ResponseWriter, _ *http.Request) {
				if tc.value != "" {
					w.Header().Set("Retry-After", tc.value)
				}
				w.WriteHeader(http.StatusServiceUnavailable)
			})
			out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url}, msg)
			if !out.Retryable || out.RetryAfter < tc.min || out.RetryAfter > tc.max {
				t.Fatalf("outcome = %+v, want retryable with Retry-After in [%v, %v]", out, tc.min, tc.max)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		value string
		want  time.Duration
	}{
		{"0", 0},
		{"-5", 0},
		{" 30 ", 30 * time.Second},
		{"Sat, 01 Mar 2025 12:05:00 GMT", 5 * time.Minute},
		{"Sat, 01 Mar 2025 11:00:00 GMT", 0},
		{"Saturday, 01-Mar-25 12:00:10 GMT", 10 * time.Second},
		{"9223372036854775807", time.Duration(math.MaxInt64)},
		// Longer than a Duration holds: the longest one, not a wrapped or
		// dropped value.
		{"99999999999", time.Duration(math.MaxInt64)},
		{"99999999999999999999", time.Duration(math.MaxInt64)},
		{"-99999999999999999999", 0},
		{"Thu, 01 Mar 2125 12:00:00 GMT", now.AddDate(100, 0, 0).Sub(now)},
		{"Sat, 01 Mar 2425 12:00:00 GMT", time.Duration(math.MaxInt64)},
		{"1.5", 0},
		{"", 0},
	} {
		if got := deliver.RetryAfter(tc.value, now); got != tc.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tc.value, got, tc.want)
		}
	}
}

func TestDeliverTimeout(t *testing.T) {
	t.Parallel()
	url, _ := destination(t, func(_ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url, Timeout: 20 * time.Millisecond}, msg)
	if out.Delivered || !out.Retryable || out.Code != 0 || !errors.Is(out.Err, context.DeadlineExceeded) {
		t.Fatalf("outcome = %+v, want retryable deadline exceeded", out)
	}
}

func TestDeliverConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: "http://" + addr + "/hooks"}, msg)
	if out.Delivered || !out.Retryable || out.Code != 0 || out.Err == nil {
		t.Fatalf("outcome = %+v, want a retryable connection error", out)
	}
}

func TestDeliverBadURLIsPermanent(t *testing.T) {
	t.Parallel()
	out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: "http://bad host/"}, msg)
	if out.Delivered || out.Retryable || out.Err == nil {
		t.Fatalf("outcome = %+v, want a permanent error", out)
	}
}

// The client reads what a destination answers, so one connection carries
// every delivery, failed or not.
func TestDeliverReusesConnections(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	var calls atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1)%2 == 0 {
			w.WriteHeader(http.StatusInternalServerError)
		}
		io.WriteString(w, strings.Repeat("b", 8<<10))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := newClient(t)
	for range 6 {
		c.Deliver(context.Background(), deliver.Destination{Name: "app", URL: srv.URL}, msg)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("6 sequential deliveries opened %d connections, want 1", n)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	const base, max = time.Second, time.Hour
	top := func() float64 { return 0.999999 }
	for _, tc := range []struct {
		attempt int
		ceiling time.Duration
	}{
		{-1, base},
		{0, base},
		{1, 2 * base},
		{2, 4 * base},
		{11, 2048 * base},
		{12, max},
		{62, max},
		{1000, max},
	} {
		got := deliver.Backoff(tc.attempt, base, max, top)
		if got > tc.ceiling || got < tc.ceiling*99/100 {
			t.Errorf("Backoff(%d) at the top of the jitter = %v, want just under %v", tc.attempt, got, tc.ceiling)
		}
		if got := deliver.Backoff(tc.attempt, base, max, func() float64 { return 0 }); got != 0 {
			t.Errorf("Backoff(%d) at the bottom of the jitter = %v, want 0", tc.attempt, got)
		}
		if got := deliver.Backoff(tc.attempt, base, max, func() float64 { return 0.5 }); got != tc.ceiling/2 {
			t.Errorf("Backoff(%d) halfway = %v, want %v", tc.attempt, got, tc.ceiling/2)
		}
	}
}

// target starts a server that only counts what reaches it: where a
// redirect points, which nothing should reach.
func target(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// redirect answers code with a Location of loc.
func redirect(code int, loc string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Location", loc)
		w.WriteHeader(code)
		io.WriteString(w, "moved")
	}
}

// wantRedirectRefused checks that out is a permanent failure with code
// whose error names loc, the Location's scheme and host.
func wantRedirectRefused(t *testing.T, out deliver.Outcome, code int, loc string) {
	t.Helper()
	if out.Delivered || out.Retryable || out.Code != code || out.Err == nil {
		t.Fatalf("outcome = %+v, want a permanent failure with %d", out, code)
	}
	want := fmt.Sprintf("deliver to app: destination answered %d to %q; configure the final URL", code, loc)
	if out.Err.Error() != want {
		t.Errorf("error = %q, want %q", out.Err, want)
	}
}

func TestDeliverDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	for _, code := range []int{301, 302, 303, 307, 308} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			other, hits := target(t)
			loc := other.URL + "/final?k=v"
			url, got := destination(t, redirect(code, loc))
			out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url, Signer: signer(t)}, msg)
			wantRedirectRefused(t, out, code, other.URL)
			if len(got) != 1 {
				t.Errorf("destination got %d requests, want 1", len(got))
			}
			// Deliver has returned: a followed redirect would have reached
			// other by now.
			if n := hits.Load(); n != 0 {
				t.Errorf("the Location got %d requests, want none", n)
			}
			if out.Body != "moved" {
				t.Errorf("Body = %q, want the redirect's body", out.Body)
			}
		})
	}
}

func TestDeliverRedirectLoop(t *testing.T) {
	t.Parallel()
	url, got := destination(t, redirect(http.StatusFound, "/loop"))
	out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url + "/loop"}, msg)
	wantRedirectRefused(t, out, http.StatusFound, url)
	if len(got) != 1 {
		t.Errorf("destination got %d requests, want 1", len(got))
	}
}

// New(nil) builds its own client, which must not follow redirects either.
func TestDeliverOwnClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	other, hits := target(t)
	url, _ := destination(t, func(w http.ResponseWriter, r *http.Request) {
		// The client's connections cannot be closed from here: the server
		// closes this one, so no goroutine outlives the test.
		w.Header().Set("Connection", "close")
		redirect(http.StatusTemporaryRedirect, other.URL)(w, r)
	})
	out := deliver.New(nil).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url}, msg)
	wantRedirectRefused(t, out, http.StatusTemporaryRedirect, other.URL)
	if n := hits.Load(); n != 0 {
		t.Errorf("the Location got %d requests, want none", n)
	}
}

// The caller's client is copied, not changed: it still follows redirects
// for the caller's own requests.
func TestDeliverLeavesCallerClientAlone(t *testing.T) {
	t.Parallel()
	other, hits := target(t)
	url, _ := destination(t, redirect(http.StatusPermanentRedirect, other.URL))
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	out := deliver.New(hc).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url}, msg)
	wantRedirectRefused(t, out, http.StatusPermanentRedirect, other.URL)
	if hc.CheckRedirect != nil {
		t.Fatal("New set the caller's CheckRedirect")
	}
	resp, err := hc.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || hits.Load() != 1 {
		t.Fatalf("the caller's client got %d, Location %d requests; want it to follow the redirect", resp.StatusCode, hits.Load())
	}
}

func TestDeliverRedirectLocation(t *testing.T) {
	t.Parallel()
	long := "https://" + strings.Repeat("a", 5000) + ".example/x"
	for _, tc := range []struct {
		name     string
		location func(url string) string
		want     func(url string) string
	}{
		{"relative", func(string) string { return "/moved?token=secret" }, func(url string) string { return strconv.Quote(url) }},
		{"secrets", func(string) string { return "https://u:secret@other.example/hooks/secret?token=secret" },
			func(string) string { return strconv.Quote("https://other.example") }},
		{"long", func(string) string { return long }, func(string) string { return strconv.Quote(long[:256]) + "..." }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var url string
			url, _ = destination(t, func(w http.ResponseWriter, r *http.Request) {
				redirect(http.StatusFound, tc.location("http://"+r.Host))(w, r)
			})
			out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url}, msg)
			if out.Retryable || out.Err == nil {
				t.Fatalf("outcome = %+v, want a permanent failure", out)
			}
			want := "destination answered 302 to " + tc.want(url) + "; configure the final URL"
			if !strings.HasSuffix(out.Err.Error(), want) {
				t.Errorf("error = %.400q, want it to end %.400q", out.Err, want)
			}
		})
	}
}

func TestDeliverDestinationHeaders(t *testing.T) {
	t.Parallel()
	url, got := destination(t, status(http.StatusNoContent))
	d := deliver.Destination{Name: "app", URL: url, Signer: signer(t), Headers: map[string]string{
		"Authorization":     "Bearer tok",
		"User-Agent":        "app-gateway/1",
		"content-type":      "text/plain",
		"Webhook-Id":        "forged",
		"webhook-signature": "v1,Zm9yZ2Vk",
		"webhook-timestamp": "1",
		"X-Hookgate-Source": "forged",
	}}
	out := newClient(t).Deliver(context.Background(), d, msg)
	if !out.Delivered {
		t.Fatalf("outcome = %+v, want delivered", out)
	}
	r := <-got
	if r.err != nil {
		t.Errorf("signature does not verify: %v", r.err)
	}
	for k, want := range map[string]string{
		"Authorization":        "Bearer tok",
		"User-Agent":           "app-gateway/1",
		"Content-Type":         "application/json",
		verify.HeaderWebhookID: msg.WebhookID,
		"X-Hookgate-Source":    "stripe",
	} {
		if v := r.header.Values(k); len(v) != 1 || v[0] != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	for _, k := range []string{verify.HeaderWebhookSignature, verify.HeaderWebhookTimestamp} {
		if v := r.header.Values(k); len(v) != 1 || strings.Contains(v[0], "Zm9yZ2Vk") || v[0] == "1" {
			t.Errorf("%s = %q, want the signer's", k, v)
		}
	}
}

// An unsigned destination's headers cannot make it look signed.
func TestDeliverDestinationHeadersUnsigned(t *testing.T) {
	t.Parallel()
	url, got := destination(t, status(http.StatusNoContent))
	d := deliver.Destination{Name: "app", URL: url, Headers: map[string]string{
		"Webhook-Signature": "v1,Zm9yZ2Vk", "Webhook-Timestamp": "1", "X-Api-Key": "k",
	}}
	if out := newClient(t).Deliver(context.Background(), d, msg); !out.Delivered {
		t.Fatalf("outcome = %+v, want delivered", out)
	}
	r := <-got
	for _, k := range []string{verify.HeaderWebhookSignature, verify.HeaderWebhookTimestamp} {
		if v := r.header.Get(k); v != "" {
			t.Errorf("%s = %q, want none", k, v)
		}
	}
	if v := r.header.Get("X-Api-Key"); v != "k" {
		t.Errorf("X-Api-Key = %q, want k", v)
	}
}

// A header that cannot be sent fails for good, without showing its value.
func TestDeliverInvalidDestinationHeader(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]map[string]string{
		"value": {"Authorization": "Bearer tok\r\nX-Injected: 1"},
		"name":  {"Bad Name": "v"},
		"empty": {"": "v"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url, got := destination(t, status(http.StatusNoContent))
			out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url, Headers: h}, msg)
			if out.Delivered || out.Retryable || out.Err == nil {
				t.Fatalf("outcome = %+v, want a permanent failure", out)
			}
			if strings.Contains(out.Err.Error(), "tok") {
				t.Errorf("error %q shows the header's value", out.Err)
			}
			if len(got) != 0 {
				t.Error("the request was sent")
			}
		})
	}
}

// safeText reports whether s is valid UTF-8 without control characters
// but newline and tab.
func safeText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < ' ' && r != '\n' && r != '\t' || r >= 0x7f && r < 0xa0 {
			return false
		}
	}
	return true
}

func TestDeliverBody(t *testing.T) {
	t.Parallel()
	const raw = "\x00\x01a\x1b[31mb\r\n\tc\xff\xfed\u0085e\u00e9\u20ac "
	const want = "\uFFFD\uFFFDa\uFFFD[31mb\uFFFD\n\tc\uFFFD\uFFFDd\uFFFDe\u00e9\u20ac "
	for _, code := range []int{http.StatusOK, http.StatusBadRequest, http.StatusServiceUnavailable} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			url, _ := destination(t, func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(code)
				io.WriteString(w, raw)
			})
			out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url}, msg)
			if out.Body != want {
				t.Errorf("Body = %q, want %q", out.Body, want)
			}
			if out.Delivered {
				return
			}
			if out.Err == nil || !safeText(out.Err.Error()) || !strings.HasSuffix(out.Err.Error(), ": "+strings.TrimSpace(want)) {
				t.Errorf("error = %q, want it to end with the sanitised, trimmed body", out.Err)
			}
		})
	}
}

func TestDeliverBodyIsCapped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		code    int
		body    string
		want    string // Body
		snippet string // in the error, if not delivered
	}{
		{"ascii", 200, strings.Repeat("x", 5000), strings.Repeat("x", 1024), ""},
		{"ascii failed", 500, strings.Repeat("x", 5000), strings.Repeat("x", 1024), strings.Repeat("x", 256)},
		// 3-byte characters: 1024 bytes end inside the 342nd, which is
		// dropped rather than shown as invalid.
		{"euro", 422, strings.Repeat("€", 2000), strings.Repeat("€", 341), strings.Repeat("€", 85)},
		// Replacements take 3 bytes each; still at most 1 KiB.
		{"controls", 502, strings.Repeat("\x00", 2000), strings.Repeat("\uFFFD", 341), strings.Repeat("\uFFFD", 85)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, _ := destination(t, func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.code)
				io.WriteString(w, tc.body)
			})
			out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url}, msg)
			if out.Body != tc.want {
				t.Errorf("Body = %d bytes %.40q..., want %d bytes %.40q...", len(out.Body), out.Body, len(tc.want), tc.want)
			}
			if tc.snippet == "" {
				return
			}
			want := fmt.Sprintf("deliver to app: HTTP %d: %s", tc.code, tc.snippet)
			if out.Err == nil || out.Err.Error() != want {
				t.Errorf("error = %.60q (%d bytes), want %.60q (%d bytes)", out.Err, len(out.Err.Error()), want, len(want))
			}
		})
	}
}

// A Retry-After beyond any sensible wait comes out huge, not wrapped
// negative, and NextDelay holds it to the maximum.
func TestDeliverHugeRetryAfter(t *testing.T) {
	t.Parallel()
	for _, value := range []string{"99999999999", time.Now().AddDate(100, 0, 0).UTC().Format(http.TimeFormat)} {
		t.Run(value, func(t *testing.T) {
			t.Parallel()
			url, _ := destination(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", value)
				w.WriteHeader(http.StatusTooManyRequests)
			})
			out := newClient(t).Deliver(context.Background(), deliver.Destination{Name: "app", URL: url}, msg)
			if !out.Retryable || out.RetryAfter < 99*365*24*time.Hour {
				t.Fatalf("outcome = %+v, want retryable after about a century or more", out)
			}
			if d := deliver.NextDelay(1, time.Second, time.Hour, out.RetryAfter, func() float64 { return 0.5 }); d != time.Hour {
				t.Errorf("NextDelay = %v, want the maximum, 1h", d)
			}
		})
	}
}

func TestNextDelay(t *testing.T) {
	t.Parallel()
	const maxInt = time.Duration(math.MaxInt64)
	half := func() float64 { return 0.5 }
	top := func() float64 { return math.Nextafter(1, 0) }
	for _, tc := range []struct {
		name                          string
		attempt                       int
		initial, maxDelay, retryAfter time.Duration
		rnd                           func() float64
		min, max                      time.Duration
	}{
		{"first failure", 1, time.Second, time.Hour, 0, half, 500 * time.Millisecond, 500 * time.Millisecond},
		{"first failure, top", 1, time.Second, time.Hour, 0, top, time.Second - time.Millisecond, time.Second - 1},
		{"third failure", 3, time.Second, time.Hour, 0, half, 2 * time.Second, 2 * time.Second},
		{"retry after wins", 1, time.Second, time.Hour, 30 * time.Second, half, 30 * time.Second, 30 * time.Second},
		{"backoff wins", 13, time.Second, time.Hour, 30 * time.Second, half, 30 * time.Minute, 30 * time.Minute},
		{"retry after capped", 1, time.Second, time.Hour, maxInt, half, time.Hour, time.Hour},
		{"attempt 10000", 10000, time.Second, time.Hour, 0, top, time.Hour - time.Second, time.Hour - 1},
		{"largest attempt", math.MaxInt, time.Second, time.Hour, 0, half, 30 * time.Minute, 30 * time.Minute},
		{"attempt 0", 0, time.Second, time.Hour, 0, half, 500 * time.Millisecond, 500 * time.Millisecond},
		{"smallest attempt", math.MinInt, time.Second, time.Hour, 0, half, 500 * time.Millisecond, 500 * time.Millisecond},
		{"initial above max", 1, 2 * time.Hour, time.Hour, 0, half, 30 * time.Minute, 30 * time.Minute},
		{"largest everything", 10000, maxInt, maxInt, maxInt, top, maxInt, maxInt},
		{"largest, no retry after", 10000, maxInt, maxInt, 0, top, maxInt - 1<<11, maxInt - 1},
		{"zero initial", 5, 0, time.Hour, 0, half, 0, 0},
		{"negative initial", 5, -time.Second, time.Hour, 0, half, 0, 0},
		{"negative retry after", 1, time.Second, time.Hour, -time.Hour, half, 500 * time.Millisecond, 500 * time.Millisecond},
		{"smallest retry after", 1, time.Second, time.Hour, math.MinInt64, half, 500 * time.Millisecond, 500 * time.Millisecond},
		{"zero max", 3, time.Second, 0, time.Minute, half, 0, 0},
		{"negative max", 3, time.Second, -time.Hour, time.Minute, half, 0, 0},
		{"smallest max", 3, time.Second, math.MinInt64, maxInt, half, 0, 0},
		{"rnd 1", 1, time.Second, time.Hour, 0, func() float64 { return 1 }, time.Second - 1, time.Second - 1},
		{"rnd above 1", 10000, maxInt, maxInt, 0, func() float64 { return 2 }, maxInt - 1, maxInt - 1},
		{"rnd +Inf", 1, time.Second, time.Hour, 0, func() float64 { return math.Inf(1) }, time.Second - 1, time.Second - 1},
		{"rnd negative", 1, time.Second, time.Hour, 0, func() float64 { return -1 }, 0, 0},
		{"rnd NaN", 1, time.Second, time.Hour, 0, math.NaN, 0, 0},
	} {
		d := deliver.NextDelay(tc.attempt, tc.initial, tc.maxDelay, tc.retryAfter, tc.rnd)
		if d < tc.min || d > tc.max {
			t.Errorf("%s: NextDelay(%d, %v, %v, %v) = %v, want in [%v, %v]",
				tc.name, tc.attempt, tc.initial, tc.maxDelay, tc.retryAfter, d, tc.min, tc.max)
		}
	}
}

// NextDelay stays in [0, maxDelay] whatever it is given, and honours a
// Retry-After up to the maximum.
func FuzzNextDelay(f *testing.F) {
	f.Add(1, int64(time.Second), int64(time.Hour), int64(0), 0.5)
	f.Add(10000, int64(time.Second), int64(time.Hour), int64(math.MaxInt64), 0.999)
	f.Add(math.MinInt, int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MinInt64), 1.0)
	f.Add(62, int64(2*time.Hour), int64(time.Hour), int64(-1), math.NaN())
	f.Add(0, int64(-1), int64(0), int64(5), math.Inf(-1))
	f.Fuzz(func(t *testing.T, attempt int, initial, maxDelay, retryAfter int64, r float64) {
		d := deliver.NextDelay(attempt, time.Duration(initial), time.Duration(maxDelay), time.Duration(retryAfter),
			func() float64 { return r })
		if d < 0 {
			t.Fatalf("NextDelay = %v, negative", d)
		}
		if maxDelay <= 0 {
			if d != 0 {
				t.Fatalf("NextDelay with max %v = %v, want 0", time.Duration(maxDelay), d)
			}
			return
		}
		if d > time.Duration(maxDelay) {
			t.Fatalf("NextDelay = %v, above the max %v", d, time.Duration(maxDelay))
		}
		if want := min(retryAfter, maxDelay); int64(d) < want {
			t.Fatalf("NextDelay = %v, below the Retry-After %v (max %v)", d, time.Duration(retryAfter), time.Duration(maxDelay))
		}
	})
}

func TestBackoffOutOfRange(t *testing.T) {
	t.Parallel()
	half := func() float64 { return 0.5 }
	for _, tc := range []struct {
		name           string
		base, maxDelay time.Duration
		rnd            func() float64
		want           time.Duration
	}{
		{"zero base", 0, time.Hour, half, 0},
		{"negative base", -time.Second, time.Hour, half, 0},
		{"zero max", time.Second, 0, half, 0},
		{"negative max", time.Second, -time.Hour, half, 0},
		{"rnd 1", time.Second, time.Hour, func() float64 { return 1 }, time.Second - 1},
		{"rnd NaN", time.Second, time.Hour, math.NaN, 0},
		{"largest", math.MaxInt64, math.MaxInt64, func() float64 { return 1 }, math.MaxInt64 - 1},
	} {
		if got := deliver.Backoff(0, tc.base, tc.maxDelay, tc.rnd); got != tc.want {
			t.Errorf("%s: Backoff = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// deadlineTransport records the deadline of each request's context and
// answers nothing.
type deadlineTransport struct{ deadline chan time.Time }

func (t deadlineTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	d, ok := r.Context().Deadline()
	if !ok {
		d = time.Time{}
	}
	t.deadline <- d
	return nil, errors.New("recorded")
}

// A destination built in code without a Timeout still has one, the
// configuration's default: a destination that never answers cannot hold
// an attempt, and a shutdown waiting for it, for ever.
func TestZeroTimeoutIsTheDefault(t *testing.T) {
	t.Parallel()
	tr := deadlineTransport{deadline: make(chan time.Time, 1)}
	c := deliver.New(&http.Client{Transport: tr})
	start := time.Now()
	c.Deliver(context.Background(), deliver.Destination{Name: "app", URL: "http://127.0.0.1:1/hooks"},
		deliver.Message{WebhookID: "msg_1", Payload: []byte("{}")})
	end := time.Now()
	d := <-tr.deadline
	if d.IsZero() {
		t.Fatal("an attempt to a destination without a timeout has no deadline")
	}
	if d.Before(start.Add(deliver.DefaultTimeout)) || d.After(end.Add(deliver.DefaultTimeout)) {
		t.Fatalf("deadline %v after the start, want deliver.DefaultTimeout (%v) after the attempt began", d.Sub(start), deliver.DefaultTimeout)
	}
}

// The order headers come from the message only: a destination's static
// headers cannot forge a key's position or hide a skip.
func TestDeliverOrderHeaders(t *testing.T) {
	t.Parallel()
	url, got := destination(t, status(http.StatusNoContent))
	d := deliver.Destination{Name: "app", URL: url, Headers: map[string]string{
		"Webhook-Sequence": "99", "webhook-skipped": "0",
	}}
	m := msg
	m.Headers = map[string]string{deliver.HeaderSequence: "7"}
	if out := newClient(t).Deliver(context.Background(), d, m); !out.Delivered {
		t.Fatalf("outcome = %+v, want delivered", out)
	}
	r := <-got
	if v := r.header.Values(deliver.HeaderSequence); len(v) != 1 || v[0] != "7" {
		t.Errorf("%s = %q, want the message's 7", deliver.HeaderSequence, v)
	}
	if v := r.header.Values(deliver.HeaderSkipped); len(v) != 0 {
		t.Errorf("%s = %q, want none (the message has none)", deliver.HeaderSkipped, v)
	}
}
