package provider

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hookgate/hookgate/verify"
)

// HMAC is a generic HMAC signature header, described by the source's
// signature block; its events are keyed by the source's own selectors.
const HMAC = "hmac"

// hmacAlgorithms and hmacEncodings are what a generic hmac source can use;
// "" takes the default (sha256, hex).
var (
	hmacAlgorithms = []string{"", "sha1", "sha256", "sha512"}
	hmacEncodings  = []string{"", "hex", "base64"}
)

func init() {
	register(&Provider{
		Name:      HMAC,
		rank:      80,
		Signature: checkHMACSignature,
		NewScheme: func(c Credentials, secret string, opts ...verify.Option) (verify.Scheme, error) {
			return verify.NewHMAC(secret, verify.HMACConfig{
				Header:    c.Signature.Header,
				Algorithm: c.Signature.Algorithm,
				Encoding:  c.Signature.Encoding,
				Prefix:    c.Signature.Prefix,
			}, opts...)
		},
		Notes: Notes{Signed: "the body only", Key: "(configured)", Tenant: "none"},
	})
}

// checkHMACSignature checks a signature block's header, algorithm and
// encoding.
func checkHMACSignature(sig Signature) []Problem {
	var out []Problem
	if !validHeaderName(sig.Header) {
		out = append(out, Problem{"header", fmt.Sprintf("%q: want a header name", sig.Header)})
	}
	if !slices.Contains(hmacAlgorithms, strings.ToLower(sig.Algorithm)) {
		out = append(out, Problem{"algorithm", fmt.Sprintf("%q: want sha1|sha256|sha512", sig.Algorithm)})
	}
	if !slices.Contains(hmacEncodings, strings.ToLower(sig.Encoding)) {
		out = append(out, Problem{"encoding", fmt.Sprintf("%q: want hex|base64", sig.Encoding)})
	}
	return out
}

// validHeaderName reports whether name is an HTTP token (RFC 9110).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}
