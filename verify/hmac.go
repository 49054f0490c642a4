package verify

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"net/http"
	"strconv"
	"strings"
)

// HMACConfig describes a single-header HMAC of the request body.
type HMACConfig struct {
	// Header is the header that carries the signature. Required.
	Header string
	// Algorithm is "sha1", "sha256" or "sha512" (case-insensitive);
	// "" means "sha256". HMAC-SHA1 does not depend on SHA-1's collision
	// resistance and is still what some senders use.
	Algorithm string
	// Encoding is "hex" or "base64" (standard alphabet, padded);
	// "" means "hex".
	Encoding string
	// Prefix is text the header value starts with before the encoded MAC,
	// such as "sha256=". It must match exactly when set.
	Prefix string
}

// HMAC verifies and signs a configurable HMAC of the body carried in one
// header: the header value is Prefix followed by the encoded MAC.
type HMAC struct {
	scheme   string
	key      []byte
	header   string
	newHash  func() hash.Hash
	encoding string
	prefix   string
}

var (
	_ Verifier = (*HMAC)(nil)
	_ Signer   = (*HMAC)(nil)
)

const schemeHMAC = "hmac"

// NewHMAC returns a verifier for cfg. An empty secret or header name, a
// header name that is not a valid HTTP field name, or an unknown algorithm
// or encoding is ErrConfig. opts are validated; none of them applies.
func NewHMAC(secret string, cfg HMACConfig, opts ...Option) (*HMAC, error) {
	return newHMAC(schemeHMAC, secret, cfg, opts)
}

func newHMAC(scheme, secret string, cfg HMACConfig, opts []Option) (*HMAC, error) {
	if _, err := buildOptions(scheme, opts); err != nil {
		return nil, err
	}
	if secret == "" {
		return nil, fail(scheme, "secret", ErrConfig)
	}
	if !validFieldName(cfg.Header) {
		return nil, fail(scheme, "header name", ErrConfig)
	}
	var newHash func() hash.Hash
	switch strings.ToLower(cfg.Algorithm) {
	case "", "sha256":
		newHash = sha256.New
	case "sha1":
		newHash = sha1.New
	case "sha512":
		newHash = sha512.New
	default:
		return nil, fail(scheme, "algorithm "+strconv.Quote(cfg.Algorithm), ErrConfig)
	}
	enc := strings.ToLower(cfg.Encoding)
	switch enc {
	case "":
		enc = "hex"
	case "hex", "base64":
	default:
		return nil, fail(scheme, "encoding "+strconv.Quote(cfg.Encoding), ErrConfig)
	}
	return &HMAC{
		scheme:   scheme,
		key:      []byte(secret),
		header:   cfg.Header,
		newHash:  newHash,
		encoding: enc,
		prefix:   cfg.Prefix,
	}, nil
}

// Verify checks the configured header against the HMAC of body.
func (h *HMAC) Verify(r *http.Request, body []byte) error {
	if len(h.key) == 0 {
		return fail(schemeHMAC, "secret", ErrConfig)
	}
	v, err := header(r, h.scheme, h.header)
	if err != nil {
		return err
	}
	check := "header " + h.header
	encoded, ok := strings.CutPrefix(v, h.prefix)
	if !ok {
		return fail(h.scheme, check, ErrMalformed)
	}
	mac := h.sum(body)
	var got []byte
	switch h.encoding {
	case "hex":
		got, err = hex.DecodeString(encoded)
	default:
		got, err = base64.StdEncoding.DecodeString(encoded)
	}
	if err != nil || len(got) != len(mac) {
		return fail(h.scheme, check, ErrMalformed)
	}
	if !hmac.Equal(mac, got) {
		return fail(h.scheme, "signature", ErrMismatch)
	}
	return nil
}

// Sign sets the configured header to Prefix and the encoded HMAC of body.
func (h *HMAC) Sign(r *http.Request, body []byte) error {
	if len(h.key) == 0 {
		return fail(schemeHMAC, "secret", ErrConfig)
	}
	ensureHeader(r)
	mac := h.sum(body)
	var encoded string
	switch h.encoding {
	case "hex":
		encoded = hex.EncodeToString(mac)
	default:
		encoded = base64.StdEncoding.EncodeToString(mac)
	}
	r.Header.Set(h.header, h.prefix+encoded)
	return nil
}

func (h *HMAC) sum(body []byte) []byte {
	m := hmac.New(h.newHash, h.key)
	_, _ = m.Write(body)
	return m.Sum(nil)
}

// validFieldName reports whether s is an HTTP field name (RFC 9110 token).
func validFieldName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// GitHub verifies and signs GitHub webhooks: X-Hub-Signature-256
// "sha256=<hex HMAC-SHA256(secret, body)>".
type GitHub struct{ h *HMAC }

var (
	_ Verifier = (*GitHub)(nil)
	_ Signer   = (*GitHub)(nil)
)

// HeaderGitHubSignature is the header GitHub signs deliveries in.
const HeaderGitHubSignature = "X-Hub-Signature-256"

// NewGitHub returns a GitHub verifier for the webhook's secret.
func NewGitHub(secret string, opts ...Option) (*GitHub, error) {
	h, err := newHMAC("github", secret, HMACConfig{
		Header: HeaderGitHubSignature, Algorithm: "sha256", Encoding: "hex", Prefix: "sha256=",
	}, opts)
	if err != nil {
		return nil, err
	}
	return &GitHub{h: h}, nil
}

// Verify checks X-Hub-Signature-256.
func (g *GitHub) Verify(r *http.Request, body []byte) error {
	if g.h == nil {
		return fail("github", "secret", ErrConfig)
	}
	return g.h.Verify(r, body)
}

// Sign sets X-Hub-Signature-256.
func (g *GitHub) Sign(r *http.Request, body []byte) error {
	if g.h == nil {
		return fail("github", "secret", ErrConfig)
	}
	return g.h.Sign(r, body)
}

// Shopify verifies and signs Shopify webhooks: X-Shopify-Hmac-Sha256, the
// base64 HMAC-SHA256(secret, body).
type Shopify struct{ h *HMAC }

var (
	_ Verifier = (*Shopify)(nil)
	_ Signer   = (*Shopify)(nil)
)

// HeaderShopifyHMAC is the header Shopify signs deliveries in.
const HeaderShopifyHMAC = "X-Shopify-Hmac-Sha256"

// NewShopify returns a Shopify verifier for the app's client secret.
func NewShopify(secret string, opts ...Option) (*Shopify, error) {
	h, err := newHMAC("shopify", secret, HMACConfig{
		Header: HeaderShopifyHMAC, Algorithm: "sha256", Encoding: "base64",
	}, opts)
	if err != nil {
		return nil, err
	}
	return &Shopify{h: h}, nil
}

// Verify checks X-Shopify-Hmac-Sha256.
func (s *Shopify) Verify(r *http.Request, body []byte) error {
	if s.h == nil {
		return fail("shopify", "secret", ErrConfig)
	}
	return s.h.Verify(r, body)
}

// Sign sets X-Shopify-Hmac-Sha256.
func (s *Shopify) Sign(r *http.Request, body []byte) error {
	if s.h == nil {
		return fail("shopify", "secret", ErrConfig)
	}
	return s.h.Sign(r, body)
}
