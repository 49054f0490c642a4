package verify

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// HeaderStripeSignature is the header Stripe signs deliveries in.
const HeaderStripeSignature = "Stripe-Signature"

// Stripe verifies and signs Stripe webhooks: Stripe-Signature
// "t=<unix>,v1=<hex>[,v1=<hex>...][,v0=...]", where v1 is hex
// HMAC-SHA256(secret, "<t>.<body>"). Any matching v1 passes, so that
// deliveries signed during a secret rotation verify; v0 and other schemes
// are ignored.
type Stripe struct {
	key       []byte
	now       func() time.Time
	tolerance time.Duration
}

var (
	_ Verifier = (*Stripe)(nil)
	_ Signer   = (*Stripe)(nil)
)

const schemeStripe = "stripe"

// NewStripe returns a Stripe verifier. secret is the endpoint's signing
// secret ("whsec_..."), used as it is. The tolerance defaults to
// [DefaultTolerance] (Stripe's 300 s).
func NewStripe(secret string, opts ...Option) (*Stripe, error) {
	o, err := buildOptions(schemeStripe, opts)
	if err != nil {
		return nil, err
	}
	if secret == "" {
		return nil, fail(schemeStripe, "secret", ErrConfig)
	}
	return &Stripe{key: []byte(secret), now: o.now, tolerance: o.tolerance}, nil
}

// Verify checks the Stripe-Signature header.
func (s *Stripe) Verify(r *http.Request, body []byte) error {
	if len(s.key) == 0 {
		return fail(schemeStripe, "secret", ErrConfig)
	}
	return verifyTV1(r, body, schemeStripe, HeaderStripeSignature, s.key, s.now(), s.tolerance)
}

// Sign sets Stripe-Signature for the signer's clock time.
func (s *Stripe) Sign(r *http.Request, body []byte) error {
	if len(s.key) == 0 {
		return fail(schemeStripe, "secret", ErrConfig)
	}
	ensureHeader(r)
	r.Header.Set(HeaderStripeSignature, signTV1(s.key, s.now(), body))
	return nil
}

// verifyTV1 verifies a "t=,v1=" header (Stripe, Shippo).
func verifyTV1(r *http.Request, body []byte, scheme, name string, key []byte, now time.Time, tol time.Duration) error {
	v, err := header(r, scheme, name)
	if err != nil {
		return err
	}
	t, v1, ok := parseTV1(v)
	if !ok {
		return fail(scheme, "header "+name, ErrMalformed)
	}
	unix, ok := parseDigits(t)
	if !ok {
		return fail(scheme, "timestamp", ErrMalformed)
	}
	if err := checkTime(scheme, now, time.Unix(unix, 0), tol); err != nil {
		return err
	}
	if !anyHexEqual(hmacSHA256(key, t, ".", body), v1) {
		return fail(scheme, "signature", ErrMismatch)
	}
	return nil
}

// signTV1 returns the "t=,v1=" header value for now.
func signTV1(key []byte, now time.Time, body []byte) string {
	t := strconv.FormatInt(now.Unix(), 10)
	return "t=" + t + ",v1=" + hex.EncodeToString(hmacSHA256(key, t, ".", body))
}
