package deliver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// snippetSize bounds how much of a failed response's body is kept in its
// error; drainSize how much is read so the connection can be reused.
const (
	snippetSize = 256
	drainSize   = 64 << 10
)

// Destination is where events are delivered.
type Destination struct {
	Name string
	URL  string
	// Signer signs each delivery; nil sends it unsigned.
	Signer *verify.Standard
	// Timeout bounds one attempt, from connecting until the response is
	// read; zero means no bound beyond the context.
	Timeout time.Duration
}

// Message is one event as a destination receives it.
type Message struct {
	// WebhookID is the webhook-id header: the event's key.
	WebhookID   string
	Payload     []byte
	ContentType string
	// Headers are sent as they are (the X-Hookgate-* headers).
	Headers map[string]string
}

// Outcome is how one attempt ended.
type Outcome struct {
	// Delivered: the destination answered 2xx.
	Delivered bool
	// Retryable: not delivered, and worth another attempt (408, 429, 5xx,
	// a timeout or a connection error).
	Retryable bool
	// Code is the HTTP status; 0 when no response came.
	Code int
	// RetryAfter is the destination's Retry-After, if it sent one.
	RetryAfter time.Duration
	// Err says what went wrong; nil when delivered.
	Err      error
	Duration time.Duration
}

// Client delivers messages. It is safe for concurrent use.
type Client struct {
	http *http.Client
	now  func() time.Time
}

// New returns a client sending through hc; nil means a client of its own.
func New(hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	return &Client{http: hc, now: time.Now}
}

// Deliver makes one attempt to deliver m to d.
func (c *Client) Deliver(ctx context.Context, d Destination, m Message) Outcome {
	start := c.now()
	out := c.deliver(ctx, d, m)
	out.Duration = c.now().Sub(start)
	return out
}

func (c *Client) deliver(ctx context.Context, d Destination, m Message) Outcome {
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(m.Payload))
	if err != nil {
		return Outcome{Err: fmt.Errorf("deliver to %s: %w", d.Name, err)}
	}
	ct := m.ContentType
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("User-Agent", "hookgate")
	for k, v := range m.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set(verify.HeaderWebhookID, m.WebhookID)
	if d.Signer != nil {
		if err := d.Signer.Sign(req, m.Payload); err != nil {
			return Outcome{Err: fmt.Errorf("deliver to %s: sign: %w", d.Name, err)}
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// Timeouts, refused and reset connections: the destination may
		// come back; a context the caller cancelled is retried too, as the
		// event was not delivered.
		return Outcome{Retryable: true, Err: fmt.Errorf("deliver to %s: %w", d.Name, err)}
	}
	defer resp.Body.Close()
	out := Outcome{Code: resp.StatusCode}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		out.Delivered = true
		io.Copy(io.Discard, io.LimitReader(resp.Body, drainSize))
		return out
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, snippetSize))
	io.Copy(io.Discard, io.LimitReader(resp.Body, drainSize))
	out.Retryable = Retryable(resp.StatusCode)
	out.RetryAfter = RetryAfter(resp.Header.Get("Retry-After"), c.now())
	msg := fmt.Sprintf("deliver to %s: HTTP %d", d.Name, resp.StatusCode)
	if s := strings.TrimSpace(string(snippet)); s != "" {
		msg += ": " + strings.ToValidUTF8(s, "?")
	}
	out.Err = errors.New(msg)
	return out
}

// Retryable reports whether an answer with HTTP status code is worth
// another attempt: 408, 429 and 5xx. Other 4xx mean the destination will
// not take the event as it is.
func Retryable(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// RetryAfter parses a Retry-After header: delay seconds or an HTTP date.
// It returns zero for an absent, malformed or past value.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(math.MaxInt64/time.Second) {
			return time.Duration(math.MaxInt64)
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Backoff is a delay with full jitter: uniform in
// [0, min(max, base*2^attempt)), with rnd giving a number in [0, 1).
// Attempt 0 (the delay after the first failure) is bounded by base; the
// bound doubles with each attempt until it reaches max.
func Backoff(attempt int, base, max time.Duration, rnd func() float64) time.Duration {
	ceiling := max
	attempt = min(attempt, 62)
	if attempt < 0 {
		attempt = 0
	}
	if base <= max>>attempt {
		ceiling = base << attempt
	}
	return time.Duration(rnd() * float64(ceiling))
}
