package verify

import (
	"crypto/sha256"
	"encoding/binary"
	"net/http"
)

// Digester is implemented by every scheme type. SignedDigest returns a
// SHA-256 digest of what Verify authenticates in a delivery: the scheme's
// name, then each covered part with its length. Two deliveries with one
// digest carry the same signed content, whatever else differs between
// them (headers the scheme does not sign, a URL path it does not sign), so
// a receiver can recognise a captured delivery replayed with its unsigned
// parts changed. The digest is meaningful only for a delivery that Verify
// accepted; credentials (secrets, ?token=) are never part of it.
type Digester interface {
	SignedDigest(r *http.Request, body []byte) [sha256.Size]byte
}

var (
	_ Digester = (*Standard)(nil)
	_ Digester = (*Stripe)(nil)
	_ Digester = (*GitHub)(nil)
	_ Digester = (*Shopify)(nil)
	_ Digester = (*HubSpot)(nil)
	_ Digester = (*Shippo)(nil)
	_ Digester = (*Salesforce)(nil)
	_ Digester = (*HMAC)(nil)
)

// digest hashes the scheme and the parts, each prefixed with its length so
// that moving bytes from one part to the next changes the digest.
func digest(scheme string, parts ...[]byte) [sha256.Size]byte {
	h := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	for _, p := range append([][]byte{[]byte(scheme)}, parts...) {
		n := binary.PutUvarint(buf[:], uint64(len(p)))
		h.Write(buf[:n])
		h.Write(p)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// headerOrEmpty is the one value of the named header as Verify reads it,
// or "" when Verify would have refused it.
func headerOrEmpty(r *http.Request, name string) string {
	v, err := header(r, "", name)
	if err != nil {
		return ""
	}
	return v
}

// SignedDigest implements [Digester]: webhook-id, webhook-timestamp and
// the body.
func (s *Standard) SignedDigest(r *http.Request, body []byte) [sha256.Size]byte {
	return digest(schemeStandard, []byte(headerOrEmpty(r, HeaderWebhookID)),
		[]byte(headerOrEmpty(r, HeaderWebhookTimestamp)), body)
}

// SignedDigest implements [Digester]: the signed timestamp and the body.
func (s *Stripe) SignedDigest(r *http.Request, body []byte) [sha256.Size]byte {
	return tv1Digest(r, body, schemeStripe, HeaderStripeSignature)
}

// tv1Digest is the digest of a t=,v1= scheme: the t value and the body.
func tv1Digest(r *http.Request, body []byte, scheme, name string) [sha256.Size]byte {
	t, _, _ := parseTV1(headerOrEmpty(r, name))
	return digest(scheme, []byte(t), body)
}

// SignedDigest implements [Digester]: the body.
func (g *GitHub) SignedDigest(_ *http.Request, body []byte) [sha256.Size]byte {
	return digest("github", body)
}

// SignedDigest implements [Digester]: the body.
func (s *Shopify) SignedDigest(_ *http.Request, body []byte) [sha256.Size]byte {
	return digest("shopify", body)
}

// SignedDigest implements [Digester]: the body.
func (h *HMAC) SignedDigest(_ *http.Request, body []byte) [sha256.Size]byte {
	return digest(h.scheme, body)
}

// SignedDigest implements [Digester] for the signature Verify checks: v3
// covers the method, the URI as HubSpot decodes it, the body and the
// timestamp; v2 the method, the URI and the body; v1 the body alone.
func (h *HubSpot) SignedDigest(r *http.Request, body []byte) [sha256.Size]byte {
	uri := func() []byte {
		u, err := h.requestURL(r)
		if err != nil {
			return nil
		}
		return []byte(u)
	}
	if len(r.Header.Values(HeaderHubSpotSignatureV3)) > 0 {
		return digest(schemeHubSpot+" v3", []byte(method(r)), []byte(hubSpotDecodeURI(string(uri()))),
			body, []byte(headerOrEmpty(r, HeaderHubSpotRequestTimestamp)))
	}
	if headerOrEmpty(r, HeaderHubSpotSignatureVersion) == "v2" {
		return digest(schemeHubSpot+" v2", []byte(method(r)), uri(), body)
	}
	return digest(schemeHubSpot+" v1", body)
}

// SignedDigest implements [Digester] for the check Verify makes: with a
// secret and a Shippo-Auth-Signature, the signed timestamp and the body;
// with the token alone, the body.
func (s *Shippo) SignedDigest(r *http.Request, body []byte) [sha256.Size]byte {
	if len(s.key) > 0 && (s.token == nil || len(r.Header.Values(HeaderShippoSignature)) > 0) {
		return tv1Digest(r, body, schemeShippo, HeaderShippoSignature)
	}
	return digest(schemeShippo, body)
}

// SignedDigest implements [Digester]: the body, which carries the
// organization Verify checks (Salesforce signs nothing).
func (s *Salesforce) SignedDigest(_ *http.Request, body []byte) [sha256.Size]byte {
	return digest(schemeSalesforce, body)
}
