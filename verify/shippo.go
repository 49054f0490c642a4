package verify

import (
	"net/http"
	"time"
)

// HeaderShippoSignature is the header Shippo signs HMAC-secured deliveries in.
const HeaderShippoSignature = "Shippo-Auth-Signature"

// Shippo verifies and signs Shippo webhooks, by HMAC signature, by a URL
// token, or by either.
//
// With a secret, Shippo-Auth-Signature is "t=<unix>,v1=<hex>", where v1 is
// hex HMAC-SHA256(secret, "<t>.<body>"), within the tolerance. With a
// token, the ?token= query parameter must equal it. With both, the
// signature header is checked when it is present and the token otherwise.
type Shippo struct {
	key       []byte
	token     *token
	now       func() time.Time
	tolerance time.Duration
}

var (
	_ Verifier = (*Shippo)(nil)
	_ Signer   = (*Shippo)(nil)
)

const schemeShippo = "shippo"

// NewShippo returns a Shippo verifier. At least one of secret and token
// must be set. The tolerance defaults to [DefaultTolerance].
func NewShippo(secret, token string, opts ...Option) (*Shippo, error) {
	o, err := buildOptions(schemeShippo, opts)
	if err != nil {
		return nil, err
	}
	if secret == "" && token == "" {
		return nil, fail(schemeShippo, "secret and token", ErrConfig)
	}
	s := &Shippo{token: newToken(token), now: o.now, tolerance: o.tolerance}
	if secret != "" {
		s.key = []byte(secret)
	}
	return s, nil
}

// Verify checks the signature header or the token, as configured.
func (s *Shippo) Verify(r *http.Request, body []byte) error {
	switch {
	case len(s.key) > 0 && (s.token == nil || len(r.Header.Values(HeaderShippoSignature)) > 0):
		return verifyTV1(r, body, schemeShippo, HeaderShippoSignature, s.key, s.now(), s.tolerance)
	case s.token != nil:
		return s.token.check(r, schemeShippo)
	}
	return fail(schemeShippo, "secret and token", ErrConfig)
}

// Sign sets Shippo-Auth-Signature when a secret is configured and the
// ?token= parameter when a token is.
func (s *Shippo) Sign(r *http.Request, body []byte) error {
	if len(s.key) == 0 && s.token == nil {
		return fail(schemeShippo, "secret and token", ErrConfig)
	}
	if s.token != nil {
		if err := s.token.set(r, schemeShippo); err != nil {
			return err
		}
	}
	if len(s.key) > 0 {
		ensureHeader(r)
		r.Header.Set(HeaderShippoSignature, signTV1(s.key, s.now(), body))
	}
	return nil
}
