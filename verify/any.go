package verify

import (
	"crypto/sha256"
	"net/http"
)

// Scheme is what every scheme type is: a verifier, a signer and a
// digester.
type Scheme interface {
	Verifier
	Signer
	Digester
}

var (
	_ Scheme = (*Standard)(nil)
	_ Scheme = (*Stripe)(nil)
	_ Scheme = (*GitHub)(nil)
	_ Scheme = (*Shopify)(nil)
	_ Scheme = (*HubSpot)(nil)
	_ Scheme = (*Shippo)(nil)
	_ Scheme = (*Salesforce)(nil)
	_ Scheme = (*HMAC)(nil)
	_ Scheme = (*Any)(nil)
)

// Any accepts a delivery that any of several verifiers of one scheme,
// each built with its own secret, accepts: a receiver keeps the old
// secret beside the new one while a sender that switches at once (GitHub,
// Shopify, HubSpot) changes over. [Any.Match] says which one matched, so
// the operator can see when the old secret is no longer used.
type Any struct {
	schemes []Scheme
}

// NewAny returns the verifier that accepts what any of schemes accepts,
// tried in order. They must be one scheme with the same options, differing
// only in their secret; the first signs, and gives the digest (which
// covers no credential, so it is the same whichever secret verified).
func NewAny(schemes ...Scheme) (*Any, error) {
	if len(schemes) == 0 {
		return nil, fail("any", "secrets", ErrConfig)
	}
	for _, s := range schemes {
		if s == nil {
			return nil, fail("any", "secrets", ErrConfig)
		}
	}
	return &Any{schemes: schemes}, nil
}

// Len returns how many verifiers a tries.
func (a *Any) Len() int { return len(a.schemes) }

// Match returns the index of the first verifier that accepts the delivery.
// When none does, the error is the first verifier's: a delivery that is
// missing a header or stale fails every one the same way, and one signed
// with none of the secrets is ErrMismatch.
func (a *Any) Match(r *http.Request, body []byte) (int, error) {
	if a == nil || len(a.schemes) == 0 {
		return -1, fail("any", "secrets", ErrConfig)
	}
	var first error
	for i, s := range a.schemes {
		err := s.Verify(r, body)
		if err == nil {
			return i, nil
		}
		if first == nil {
			first = err
		}
	}
	return -1, first
}

// Verify implements [Verifier].
func (a *Any) Verify(r *http.Request, body []byte) error {
	_, err := a.Match(r, body)
	return err
}

// Sign implements [Signer] with the first verifier's secret.
func (a *Any) Sign(r *http.Request, body []byte) error {
	if a == nil || len(a.schemes) == 0 {
		return fail("any", "secrets", ErrConfig)
	}
	return a.schemes[0].Sign(r, body)
}

// SignedDigest implements [Digester]: the first verifier's digest, which
// is every one's.
func (a *Any) SignedDigest(r *http.Request, body []byte) [sha256.Size]byte {
	if a == nil || len(a.schemes) == 0 {
		return [sha256.Size]byte{}
	}
	return a.schemes[0].SignedDigest(r, body)
}
