package verify

import (
	"errors"
	"net/http"
	"net/url"
	"time"
)

// Verifier authenticates one delivery. body is the complete request body
// (already read; r.Body must not be read).
type Verifier interface {
	Verify(r *http.Request, body []byte) error
}

// Signer sets on r the headers (or, for token schemes, the query parameter
// on r.URL) that make the matching Verify accept body at the signer's clock
// time.
type Signer interface {
	Sign(r *http.Request, body []byte) error
}

// Sentinel errors. Every error from this package wraps exactly one of them.
var (
	// ErrConfig reports a bad or empty secret or option. Constructors return
	// it; a verifier that was not built by its constructor returns it from
	// Verify and Sign instead of accepting anything.
	ErrConfig = errors.New("bad configuration")
	// ErrMissing reports that a required header or query parameter is
	// absent (or empty).
	ErrMissing = errors.New("missing")
	// ErrMalformed reports a header, parameter or body that is present but
	// cannot be parsed.
	ErrMalformed = errors.New("malformed")
	// ErrStale reports a timestamp outside the tolerance, in the past or in
	// the future.
	ErrStale = errors.New("timestamp outside tolerance")
	// ErrMismatch reports that no signature, token or organization id
	// matched.
	ErrMismatch = errors.New("no match")
)

// Error is the error every verifier, signer and constructor returns. Its
// message names the scheme and the check that failed; it never contains the
// secret, the token or the expected signature.
type Error struct {
	// Scheme is the scheme's short name: "standard", "stripe", "github",
	// "shopify", "hubspot", "shippo", "salesforce" or "hmac".
	Scheme string
	// Check names what failed, in words: "header Stripe-Signature",
	// "timestamp", "signature", "query parameter token", "secret", ...
	Check string
	// Err is one of the package's sentinel errors.
	Err error
}

// Error returns "verify <scheme>: <check>: <sentinel>".
func (e *Error) Error() string {
	return "verify " + e.Scheme + ": " + e.Check + ": " + e.Err.Error()
}

// Unwrap returns the sentinel error.
func (e *Error) Unwrap() error { return e.Err }

func fail(scheme, check string, sentinel error) error {
	return &Error{Scheme: scheme, Check: check, Err: sentinel}
}

// Default tolerances of the timestamped schemes.
const (
	// DefaultTolerance is how far a delivery's timestamp may be from the
	// verifier's clock, in either direction, for Standard Webhooks, Stripe,
	// HubSpot v3 and Shippo, unless [WithTolerance] says otherwise.
	DefaultTolerance = 5 * time.Minute
)

type options struct {
	now          func() time.Time
	tolerance    time.Duration
	publicURL    string
	badClock     bool
	badTolerance bool
	badURL       bool
}

// Option configures a verifier.
type Option func(*options)

// WithClock sets the clock that timestamp checks and signatures use
// (default time.Now). A nil clock is a configuration error.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		o.now = now
		o.badClock = now == nil
	}
}

// WithTolerance sets how far a timestamp may be from the clock, in either
// direction, for timestamped schemes (default [DefaultTolerance]). It must
// be positive.
func WithTolerance(d time.Duration) Option {
	return func(o *options) {
		o.tolerance = d
		o.badTolerance = d <= 0
	}
}

// WithPublicURL sets, for HubSpot v2 and v3, the absolute URL the provider
// signed, for a receiver behind a proxy that changes the scheme, host or
// path. It is used verbatim, query string included, and must be an absolute
// http or https URL. Without it (or with "") the URL is rebuilt from the
// request: the scheme from X-Forwarded-Proto, r.URL.Scheme or r.TLS, the
// host from r.Host, then r.URL.RequestURI().
func WithPublicURL(u string) Option {
	return func(o *options) {
		o.publicURL = u
		if u == "" {
			o.badURL = false
			return
		}
		p, err := url.Parse(u)
		o.badURL = err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == ""
	}
}

func buildOptions(scheme string, opts []Option) (options, error) {
	o := options{now: time.Now, tolerance: DefaultTolerance}
	for _, opt := range opts {
		if opt == nil {
			return o, fail(scheme, "option", ErrConfig)
		}
		opt(&o)
	}
	switch {
	case o.badClock:
		return o, fail(scheme, "option WithClock", ErrConfig)
	case o.badTolerance:
		return o, fail(scheme, "option WithTolerance", ErrConfig)
	case o.badURL:
		return o, fail(scheme, "option WithPublicURL", ErrConfig)
	}
	return o, nil
}

// checkTime reports ErrStale when t is more than tol away from now.
func checkTime(scheme string, now, t time.Time, tol time.Duration) error {
	if d := now.Sub(t); d > tol || d < -tol {
		return fail(scheme, "timestamp", ErrStale)
	}
	return nil
}
