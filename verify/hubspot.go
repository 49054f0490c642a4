package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HubSpot header names.
const (
	// HeaderHubSpotSignatureV3 carries the base64 v3 signature.
	HeaderHubSpotSignatureV3 = "X-HubSpot-Signature-v3"
	// HeaderHubSpotRequestTimestamp carries the v3 signing time in unix
	// milliseconds.
	HeaderHubSpotRequestTimestamp = "X-HubSpot-Request-Timestamp"
	// HeaderHubSpotSignature carries the hex v1 or v2 signature.
	HeaderHubSpotSignature = "X-HubSpot-Signature"
	// HeaderHubSpotSignatureVersion says which of v1 and v2
	// HeaderHubSpotSignature holds.
	HeaderHubSpotSignatureVersion = "X-HubSpot-Signature-Version"
)

// HubSpot verifies HubSpot webhook and app requests, and signs with v3.
//
// When X-HubSpot-Signature-v3 is present it alone decides: base64
// HMAC-SHA256(secret, method + URI + body + timestamp), where the timestamp
// is X-HubSpot-Request-Timestamp in milliseconds (within the tolerance) and
// the URI is the full URL with HubSpot's documented percent-decoding
// applied (%3A %2F %3F %40 %21 %24 %27 %28 %29 %2A %2C %3B, and nothing
// else). Otherwise X-HubSpot-Signature-Version picks the legacy signature
// in X-HubSpot-Signature: v1 is hex SHA-256(secret + body), v2 is hex
// SHA-256(secret + method + URI + body) with the URI as sent. The legacy
// signatures carry no timestamp, so a captured v1 or v2 delivery verifies
// again whenever it is replayed.
type HubSpot struct {
	secret    []byte
	now       func() time.Time
	tolerance time.Duration
	publicURL string
}

var (
	_ Verifier = (*HubSpot)(nil)
	_ Signer   = (*HubSpot)(nil)
)

const schemeHubSpot = "hubspot"

// NewHubSpot returns a HubSpot verifier for the app's client secret. The
// tolerance for v3 timestamps defaults to [DefaultTolerance]; see
// [WithPublicURL] for a receiver behind a proxy.
func NewHubSpot(secret string, opts ...Option) (*HubSpot, error) {
	o, err := buildOptions(schemeHubSpot, opts)
	if err != nil {
		return nil, err
	}
	if secret == "" {
		return nil, fail(schemeHubSpot, "secret", ErrConfig)
	}
	return &HubSpot{secret: []byte(secret), now: o.now, tolerance: o.tolerance, publicURL: o.publicURL}, nil
}

// Verify checks the v3 signature when present, else the v1 or v2 one.
func (h *HubSpot) Verify(r *http.Request, body []byte) error {
	if len(h.secret) == 0 {
		return fail(schemeHubSpot, "secret", ErrConfig)
	}
	if len(r.Header.Values(HeaderHubSpotSignatureV3)) > 0 {
		return h.verifyV3(r, body)
	}
	version, err := header(r, schemeHubSpot, HeaderHubSpotSignatureVersion)
	if errors.Is(err, ErrMissing) {
		return fail(schemeHubSpot, "header "+HeaderHubSpotSignatureV3, ErrMissing)
	}
	if err != nil {
		return err
	}
	if version != "v1" && version != "v2" {
		return fail(schemeHubSpot, "header "+HeaderHubSpotSignatureVersion, ErrMalformed)
	}
	sig, err := header(r, schemeHubSpot, HeaderHubSpotSignature)
	if err != nil {
		return err
	}
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return fail(schemeHubSpot, "header "+HeaderHubSpotSignature, ErrMalformed)
	}
	d := sha256.New()
	_, _ = d.Write(h.secret)
	if version == "v2" {
		uri, err := h.requestURL(r)
		if err != nil {
			return err
		}
		_, _ = io.WriteString(d, method(r))
		_, _ = io.WriteString(d, uri)
	}
	_, _ = d.Write(body)
	if !hmac.Equal(d.Sum(nil), got) {
		return fail(schemeHubSpot, "signature", ErrMismatch)
	}
	return nil
}

func (h *HubSpot) verifyV3(r *http.Request, body []byte) error {
	sig, err := header(r, schemeHubSpot, HeaderHubSpotSignatureV3)
	if err != nil {
		return err
	}
	ts, err := header(r, schemeHubSpot, HeaderHubSpotRequestTimestamp)
	if err != nil {
		return err
	}
	ms, ok := parseDigits(ts)
	if !ok {
		return fail(schemeHubSpot, "header "+HeaderHubSpotRequestTimestamp, ErrMalformed)
	}
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return fail(schemeHubSpot, "header "+HeaderHubSpotSignatureV3, ErrMalformed)
	}
	if err := checkTime(schemeHubSpot, h.now(), time.UnixMilli(ms), h.tolerance); err != nil {
		return err
	}
	uri, err := h.requestURL(r)
	if err != nil {
		return err
	}
	if !hmac.Equal(h.v3(method(r), uri, body, ts), got) {
		return fail(schemeHubSpot, "signature", ErrMismatch)
	}
	return nil
}

// Sign sets X-HubSpot-Signature-v3 and X-HubSpot-Request-Timestamp for the
// signer's clock time, over r's method and URL (or the public URL).
func (h *HubSpot) Sign(r *http.Request, body []byte) error {
	if len(h.secret) == 0 {
		return fail(schemeHubSpot, "secret", ErrConfig)
	}
	uri, err := h.requestURL(r)
	if err != nil {
		return err
	}
	ensureHeader(r)
	ts := strconv.FormatInt(h.now().UnixMilli(), 10)
	r.Header.Set(HeaderHubSpotSignatureV3, base64.StdEncoding.EncodeToString(h.v3(method(r), uri, body, ts)))
	r.Header.Set(HeaderHubSpotRequestTimestamp, ts)
	return nil
}

// v3 returns HMAC-SHA256(secret, method + decoded uri + body + ts).
func (h *HubSpot) v3(method, uri string, body []byte, ts string) []byte {
	m := hmac.New(sha256.New, h.secret)
	_, _ = io.WriteString(m, method)
	_, _ = io.WriteString(m, hubSpotDecodeURI(uri))
	_, _ = m.Write(body)
	_, _ = io.WriteString(m, ts)
	return m.Sum(nil)
}

// requestURL is the URL HubSpot signed: the public URL when configured,
// else the one rebuilt from r.
func (h *HubSpot) requestURL(r *http.Request) (string, error) {
	if h.publicURL != "" {
		return h.publicURL, nil
	}
	if r.URL == nil {
		return "", fail(schemeHubSpot, "request URL", ErrMissing)
	}
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	return requestScheme(r) + "://" + host + r.URL.RequestURI(), nil
}

// requestScheme is the scheme the sender used: the first
// X-Forwarded-Proto, else the scheme of an absolute request URL, else
// whether the connection is TLS.
func requestScheme(r *http.Request) string {
	if xfp := r.Header.Get("X-Forwarded-Proto"); xfp != "" {
		first, _, _ := strings.Cut(xfp, ",")
		if p := strings.ToLower(strings.TrimSpace(first)); p == "http" || p == "https" {
			return p
		}
	}
	if r.URL.Scheme == "http" || r.URL.Scheme == "https" {
		return r.URL.Scheme
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

func method(r *http.Request) string {
	if r.Method == "" {
		return http.MethodGet
	}
	return r.Method
}

// hubSpotDecodeURI decodes exactly the percent-encodings HubSpot's v3
// documentation lists, in one left-to-right pass, case-insensitively.
// Every other byte, and every other %XX, is kept as sent.
func hubSpotDecodeURI(s string) string {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if c, ok := hubSpotDecoded(s[i+1], s[i+2]); ok {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hubSpotDecoded maps the two hex digits after '%' to the character
// HubSpot decodes them to, if it is in HubSpot's table.
func hubSpotDecoded(hi, lo byte) (byte, bool) {
	if 'a' <= lo && lo <= 'f' {
		lo -= 'a' - 'A'
	}
	switch uint16(hi)<<8 | uint16(lo) {
	case '3'<<8 | 'A':
		return ':', true
	case '2'<<8 | 'F':
		return '/', true
	case '3'<<8 | 'F':
		return '?', true
	case '4'<<8 | '0':
		return '@', true
	case '2'<<8 | '1':
		return '!', true
	case '2'<<8 | '4':
		return '$', true
	case '2'<<8 | '7':
		return '\'', true
	case '2'<<8 | '8':
		return '(', true
	case '2'<<8 | '9':
		return ')', true
	case '2'<<8 | 'A':
		return '*', true
	case '2'<<8 | 'C':
		return ',', true
	case '3'<<8 | 'B':
		return ';', true
	}
	return 0, false
}
