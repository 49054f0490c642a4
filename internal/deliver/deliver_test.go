package deliver_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
		{"99999999999999999999", 0},
		{"9223372036854775807", time.Duration(1<<63 - 1)},
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
