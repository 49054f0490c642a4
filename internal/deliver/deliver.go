package deliver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/verify"
)

// bodySize bounds how much of a response's body an Outcome keeps;
// snippetSize how much of it a failed attempt's error quotes; locationSize
// how much of a redirect's Location; drainSize how much is read in all, so
// the connection can be reused.
const (
	bodySize     = 1 << 10
	snippetSize  = 256
	locationSize = 256
	drainSize    = 64 << 10
)

// DefaultTimeout bounds an attempt to a Destination that sets no
// Timeout: the configuration's default.
const DefaultTimeout = time.Duration(config.DefaultTimeout)

// Destination is where events are delivered.
type Destination struct {
	Name string
	// URL is where events are posted. It must be the final URL: redirects
	// are never followed.
	URL string
	// Signer signs each delivery; nil sends it unsigned.
	Signer *verify.Standard
	// Timeout bounds one attempt, from connecting until the response is
	// read; zero means DefaultTimeout, so that no destination can hold an
	// attempt (and a shutdown waiting for it) for ever.
	Timeout time.Duration
	// Headers are static request headers, such as Authorization, sent with
	// every delivery. They cannot override Content-Type, webhook-id,
	// webhook-signature, webhook-timestamp or the message's headers: those
	// names are skipped here, and the message's headers are set after them.
	Headers map[string]string
}

// Message is one event as a destination receives it.
type Message struct {
	// WebhookID is the webhook-id header: the event's key. A broker's
	// sender sends it as the message's id (Nats-Msg-Id, MessageId, a
	// header), so that the broker's own dedupe sees one event once.
	WebhookID   string
	Payload     []byte
	ContentType string
	// Headers are sent as they are (the X-Hookgate-* headers).
	Headers map[string]string
	// Source, Tenant and Type are the event's, for a broker's subject,
	// routing key or topic (config.Fill) and its headers.
	Source, Tenant, Type string
	// OrderKey keeps one entity's events together where the kind can (a
	// Kafka record key, so that they share a partition): the entity
	// (tenant/type/id), or the webhook id for an event without one.
	OrderKey string
}

// Outcome is how one attempt ended.
type Outcome struct {
	// Delivered: the destination answered 2xx.
	Delivered bool
	// Retryable: not delivered, and worth another attempt (408, 429, 5xx,
	// a timeout or a connection error). A redirect is not: the
	// destination's URL has to be corrected.
	Retryable bool
	// Code is the HTTP status; 0 when no response came.
	Code int
	// RetryAfter is the destination's Retry-After, if it sent one.
	RetryAfter time.Duration
	// Body is the start of the response's body (at most 1 KiB), for any
	// status, as text safe to log: valid UTF-8, with every control
	// character but newline and tab replaced by U+FFFD. Empty when no
	// response came.
	Body string
	// Err says what went wrong; nil when delivered.
	Err error
	// Duration is how long the attempt took, until the response was read.
	Duration time.Duration
}

// Client delivers messages. It is safe for concurrent use.
type Client struct {
	http *http.Client
	now  func() time.Time
}

// New returns a client sending through a copy of hc that never follows
// redirects (hc itself is left as it is); nil means a client of its own.
func New(hc *http.Client) *Client {
	var own http.Client
	if hc != nil {
		own = *hc
	} else {
		own.Transport = &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		}
	}
	// A redirect would be followed with the signed request re-sent (307,
	// 308) or turned into a GET (301, 302, 303), to a URL nobody
	// configured: the destination's URL is fixed instead.
	own.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{http: &own, now: time.Now}
}

// Deliver makes one attempt to deliver m to d.
func (c *Client) Deliver(ctx context.Context, d Destination, m Message) Outcome {
	start := c.now()
	out, _ := c.deliver(ctx, d, m, 0)
	out.Duration = c.now().Sub(start)
	return out
}

// Headers of a delivery to a destination with order: entity, which the
// worker puts in Message.Headers so that every kind sends them.
const (
	// HeaderSequence is the delivery's position among its key's
	// deliveries to the destination: 1, 2, 3... in the order they are
	// made, the same on each retry. A gap is a delivery that was skipped.
	HeaderSequence = "webhook-sequence"
	// HeaderSkipped counts the key's deliveries that failed for good and
	// were skipped just before this one (on_exhausted: skip); absent when
	// none was.
	HeaderSkipped = "webhook-skipped"
)

// reserved are the headers a destination's static headers cannot set:
// hookgate's own, which the application relies on.
var reserved = map[string]bool{
	"Content-Type": true,
	http.CanonicalHeaderKey(verify.HeaderWebhookID):        true,
	http.CanonicalHeaderKey(verify.HeaderWebhookSignature): true,
	http.CanonicalHeaderKey(verify.HeaderWebhookTimestamp): true,
	http.CanonicalHeaderKey(HeaderSequence):                true,
	http.CanonicalHeaderKey(HeaderSkipped):                 true,
	http.CanonicalHeaderKey(HeaderBatchCount):              true,
}

// deliver makes one attempt to deliver m to d. Of a 2xx answer it also
// returns the start of the body, up to keep bytes and one more (so that
// a longer body shows), for a caller that reads the answer.
func (c *Client) deliver(ctx context.Context, d Destination, m Message, keep int) (Outcome, []byte) {
	for k, v := range d.Headers {
		// net/http refuses these too, but as an error of the attempt, which
		// would be retried; a header is wrong on every attempt. The value
		// is not shown: it may be a credential.
		if !validHeaderName(k) || !validHeaderValue(v) {
			return Outcome{Err: fmt.Errorf("deliver to %s: header %q: invalid name or value", d.Name, k)}, nil
		}
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(m.Payload))
	if err != nil {
		return Outcome{Err: fmt.Errorf("deliver to %s: %w", d.Name, redactError(err, d.URL))}, nil
	}
	ct := m.ContentType
	if ct == "" {
		ct = "application/json"
	}
	// The order matters: each step may replace what came before, so the
	// destination's headers never replace the message's, the webhook-id or
	// the signature.
	req.Header.Set("Content-Type", ct)
	req.Header.Set("User-Agent", "hookgate")
	for k, v := range d.Headers {
		if !reserved[http.CanonicalHeaderKey(k)] {
			req.Header.Set(k, v)
		}
	}
	for k, v := range m.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set(verify.HeaderWebhookID, m.WebhookID)
	if d.Signer != nil {
		if err := d.Signer.Sign(req, m.Payload); err != nil {
			return Outcome{Err: fmt.Errorf("deliver to %s: sign: %w", d.Name, err)}, nil
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// Timeouts, refused and reset connections: the destination may
		// come back; a context the caller cancelled is retried too, as the
		// event was not delivered.
		return Outcome{Retryable: true, Err: fmt.Errorf("deliver to %s: %w", d.Name, redactError(err, d.URL))}, nil
	}
	defer resp.Body.Close()
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	read := bodySize
	if ok && keep >= bodySize {
		read = keep + 1
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, int64(read)))
	// The rest is read, up to a bound, so the connection can carry the
	// next delivery.
	io.Copy(io.Discard, io.LimitReader(resp.Body, max(drainSize-int64(len(raw)), 0)))
	head := raw[:min(len(raw), bodySize)]
	// A body cut at bodySize may end in the middle of a character, which
	// is not the destination's fault; a shorter one is whole.
	cut := len(head) == bodySize
	out := Outcome{Code: resp.StatusCode, Body: scrub(text(head, bodySize, cut), req.URL)}
	switch {
	case ok:
		out.Delivered = true
		return out, raw
	case resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "":
		out.Err = fmt.Errorf("deliver to %s: destination answered %d to %s; configure the final URL",
			d.Name, resp.StatusCode, location(resp))
		return out, nil
	}
	out.Retryable = Retryable(resp.StatusCode)
	out.RetryAfter = RetryAfter(resp.Header.Get("Retry-After"), c.now())
	msg := fmt.Sprintf("deliver to %s: HTTP %d", d.Name, resp.StatusCode)
	if s := strings.TrimSpace(scrub(text(head, snippetSize, cut || len(head) > snippetSize), req.URL)); s != "" {
		msg += ": " + s
	}
	out.Err = errors.New(msg)
	return out, nil
}

// location is a redirect's target for an error message: resolved against
// the request's URL, shown as Redact shows a destination (a redirect
// often keeps the path and its token), quoted and capped.
func location(resp *http.Response) string {
	loc := redacted
	if u, err := resp.Location(); err == nil {
		loc = Redact(u.String())
	}
	if len(loc) > locationSize {
		return strconv.Quote(loc[:locationSize]) + "..."
	}
	return strconv.Quote(loc)
}

// redacted stands for a URL that Redact cannot read: never the text
// itself, which may hold a token anywhere.
const redacted = "(unreadable URL)"

// Redact returns how a destination's URL is shown anywhere outside the
// configuration: scheme://host[:port]. Tokens live in the userinfo, the
// path (Slack's /services/T…/B…/secret), the query and the fragment, so
// none of them is kept. A URL without a scheme and a host gives a fixed
// placeholder.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return redacted
	}
	return u.Scheme + "://" + u.Host
}

// redactError rewrites the URL that net/http's errors quote (in full but
// for the password) as Redact shows it.
func redactError(err error, rawURL string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = Redact(rawURL)
	}
	return err
}

// scrub removes from s, a destination's answer, the parts of its URL u
// that Redact leaves out, as a destination that quotes its request
// ("Cannot POST /services/…") would show them in the attempt log. Each is
// replaced by something no longer, so s stays within its bound.
func scrub(s string, u *url.URL) string {
	s = strings.ReplaceAll(s, u.String(), Redact(u.String()))
	parts := []string{u.RequestURI(), u.EscapedPath(), u.Path, u.RawQuery}
	for _, vs := range u.Query() {
		parts = append(parts, vs...)
	}
	if u.User != nil {
		parts = append(parts, u.User.String())
		if p, ok := u.User.Password(); ok {
			parts = append(parts, p)
		}
	}
	for _, p := range parts {
		// A shorter part ("/", "/x") hides nothing and would garble s.
		if len(p) >= len("…") {
			s = strings.ReplaceAll(s, p, "…")
		}
	}
	return s
}

// text returns the start of b, at most n bytes, as text that is safe to
// log: valid UTF-8, each invalid byte and each control character but
// newline and tab replaced by U+FFFD. When b was cut from something
// longer, an incomplete character at its end is dropped.
func text(b []byte, n int, cut bool) string {
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 && cut && !utf8.FullRune(b) {
			break
		}
		if r == utf8.RuneError && size == 1 || unicode.IsControl(r) && r != '\n' && r != '\t' {
			r = utf8.RuneError
		}
		if sb.Len()+utf8.RuneLen(r) > n {
			break
		}
		sb.WriteRune(r)
		b = b[size:]
	}
	return sb.String()
}

// validHeaderName reports whether k is an HTTP token (RFC 9110).
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// validHeaderValue reports whether v has no control character but tab,
// so that neither CR, LF nor NUL can split or end the header.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// Retryable reports whether an answer with HTTP status code is worth
// another attempt: 408, 429 and 5xx. Other 4xx mean the destination will
// not take the event as it is.
func Retryable(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// RetryAfter parses a Retry-After header: delay seconds or an HTTP date.
// It returns zero for an absent, malformed or past value. A delay too long
// for a time.Duration (about 292 years) saturates at the longest one.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if errors.Is(err, strconv.ErrRange) && strings.Trim(v, "0123456789") == "" {
		// More seconds than an int64 holds, but delay-seconds still.
		secs, err = math.MaxInt64, nil
	}
	if err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(math.MaxInt64/time.Second) {
			return time.Duration(math.MaxInt64)
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now) // Sub saturates
	}
	return 0
}

// Backoff is a delay with full jitter: uniform in
// [0, min(maxDelay, base*2^attempt)), with rnd giving a number in [0, 1).
// Attempt 0 (the delay after the first failure) is bounded by base; the
// bound doubles with each attempt until it reaches maxDelay. A base or
// maxDelay that is not positive gives zero; so does a NaN from rnd, and
// one outside [0, 1) is held inside it.
func Backoff(attempt int, base, maxDelay time.Duration, rnd func() float64) time.Duration {
	if base <= 0 || maxDelay <= 0 {
		return 0
	}
	attempt = min(max(attempt, 0), 62)
	ceiling := maxDelay
	if base <= maxDelay>>attempt {
		ceiling = base << attempt // cannot overflow: at most maxDelay
	}
	f := rnd()
	switch {
	case !(f > 0): // also NaN
		return 0
	case f >= 1:
		return ceiling - 1
	}
	// f < 1 keeps the product below 2^63, so the conversion is in range;
	// float64(ceiling) and the product may still round up to ceiling.
	return min(time.Duration(f*float64(ceiling)), ceiling-1)
}

// NextDelay is the delay before the next attempt after the attempt-th
// failed one (attempt 1 is the first failure): the Backoff from initial,
// at least retryAfter (the destination's Retry-After), and never more than
// maxDelay. It neither overflows nor goes negative for any input: an
// attempt below 1 counts as 1, a maxDelay that is not positive gives zero,
// and a huge retryAfter is capped to maxDelay.
func NextDelay(attempt int, initial, maxDelay, retryAfter time.Duration, rnd func() float64) time.Duration {
	if maxDelay <= 0 {
		return 0
	}
	// max(attempt, 1) first: attempt-1 of the smallest int would wrap.
	d := Backoff(max(attempt, 1)-1, initial, maxDelay, rnd)
	return min(max(d, retryAfter), maxDelay)
}
