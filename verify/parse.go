package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
)

// header returns the one value of the named header. An absent or empty
// header is ErrMissing; a header sent more than once is ErrMalformed, so
// that no two readers of the request can disagree on which copy counts.
func header(r *http.Request, scheme, name string) (string, error) {
	vs := r.Header.Values(name)
	switch {
	case len(vs) == 0:
		return "", fail(scheme, "header "+name, ErrMissing)
	case len(vs) > 1:
		return "", fail(scheme, "header "+name, ErrMalformed)
	}
	v := strings.TrimSpace(vs[0])
	if v == "" {
		return "", fail(scheme, "header "+name, ErrMissing)
	}
	return v, nil
}

// parseDigits parses a non-negative decimal integer of at most 18 digits
// (no sign, no spaces), so that it cannot overflow an int64.
func parseDigits(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseTV1 parses a "t=<unix>,v1=<hex>,v1=<hex>,v0=..." signature header as
// Stripe and Shippo send it. It returns the t value as sent and every v1
// value. Items other than t and v1 are ignored; an item without "=", a
// repeated or missing t, or an empty header is malformed.
func parseTV1(v string) (t string, v1 []string, ok bool) {
	seenT := false
	for item := range strings.SplitSeq(v, ",") {
		key, val, found := strings.Cut(strings.TrimSpace(item), "=")
		if !found {
			return "", nil, false
		}
		switch key {
		case "t":
			if seenT {
				return "", nil, false
			}
			seenT, t = true, val
		case "v1":
			v1 = append(v1, val)
		}
	}
	return t, v1, seenT
}

// anyHexEqual reports whether any of the hex-encoded candidates equals mac.
// Candidates that are not valid hex cannot match and are skipped. Each
// comparison is constant-time.
func anyHexEqual(mac []byte, candidates []string) bool {
	buf := make([]byte, len(mac))
	ok := false
	for _, c := range candidates {
		if hex.DecodedLen(len(c)) != len(mac) {
			continue
		}
		if _, err := hex.Decode(buf, []byte(c)); err != nil {
			continue
		}
		if hmac.Equal(mac, buf) {
			ok = true
		}
	}
	return ok
}

// anyBase64Equal is anyHexEqual for standard base64 candidates.
func anyBase64Equal(mac []byte, candidates []string) bool {
	buf := make([]byte, len(mac)+3)
	ok := false
	for _, c := range candidates {
		if base64.StdEncoding.DecodedLen(len(c)) > len(buf) {
			continue
		}
		n, err := base64.StdEncoding.Decode(buf, []byte(c))
		if err != nil {
			continue
		}
		if hmac.Equal(mac, buf[:n]) {
			ok = true
		}
	}
	return ok
}

// hmacSHA256 returns HMAC-SHA256(key, prefix || sep || body).
func hmacSHA256(key []byte, prefix, sep string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	_, _ = io.WriteString(m, prefix)
	_, _ = io.WriteString(m, sep)
	_, _ = m.Write(body)
	return m.Sum(nil)
}

// token holds a URL token. Only its digest takes part in comparisons, so
// that a comparison takes the same time whatever the length of the guess.
type token struct {
	value string
	sum   [sha256.Size]byte
}

func newToken(v string) *token {
	if v == "" {
		return nil
	}
	return &token{value: v, sum: sha256.Sum256([]byte(v))}
}

// check verifies the request's ?token= parameter.
func (t *token) check(r *http.Request, scheme string) error {
	const check = "query parameter token"
	if r.URL == nil {
		return fail(scheme, check, ErrMissing)
	}
	vs := r.URL.Query()["token"]
	switch {
	case len(vs) == 0 || (len(vs) == 1 && vs[0] == ""):
		return fail(scheme, check, ErrMissing)
	case len(vs) > 1:
		return fail(scheme, check, ErrMalformed)
	}
	got := sha256.Sum256([]byte(vs[0]))
	if subtle.ConstantTimeCompare(got[:], t.sum[:]) != 1 {
		return fail(scheme, check, ErrMismatch)
	}
	return nil
}

// set puts the token into r.URL's query string, replacing any token there.
func (t *token) set(r *http.Request, scheme string) error {
	if r.URL == nil {
		return fail(scheme, "request URL", ErrMissing)
	}
	q := r.URL.Query()
	q.Set("token", t.value)
	r.URL.RawQuery = q.Encode()
	return nil
}

// ensureHeader gives a hand-built request a header map to sign into.
func ensureHeader(r *http.Request) {
	if r.Header == nil {
		r.Header = make(http.Header)
	}
}
