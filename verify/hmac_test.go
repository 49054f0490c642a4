package verify_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/verify"
)

// GitHub's published test values ("Validating webhook deliveries",
// docs.github.com): secret "It's a Secret to Everybody", payload
// "Hello, World!".
const (
	githubSecret = "It's a Secret to Everybody"
	githubBody   = "Hello, World!"
	githubSig    = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

// Shopify publishes no vector; computed by hand with
// `printf '%s' '<body>' | openssl dgst -sha256 -hmac hush -binary | base64`.
const (
	shopifySecret = "hush"
	shopifyBody   = `{"id":820982911946154508,"email":"jon@example.com"}`
	shopifySig    = "D0UMXmhjwBRi4y66TmhJrDlhQABD7zI2fm3p6/QLMo8="
)

func withHeader(name, value string) *http.Request {
	r := post("https://hooks.example.com/in/x")
	r.Header.Set(name, value)
	return r
}

func TestGitHub(t *testing.T) {
	t.Parallel()
	v, err := verify.NewGitHub(githubSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(withHeader(verify.HeaderGitHubSignature, githubSig), []byte(githubBody)); err != nil {
		t.Fatalf("published vector: %v", err)
	}
	// Hex digits are read in either case, as every hex decoder does: the
	// same MAC in upper case proves as much.
	upper := "sha256=" + strings.ToUpper(githubSig[len("sha256="):])
	if err := v.Verify(withHeader(verify.HeaderGitHubSignature, upper), []byte(githubBody)); err != nil {
		t.Fatalf("upper-case hex: %v", err)
	}
	r := post("https://hooks.example.com/")
	if err := v.Sign(r, []byte(githubBody)); err != nil || r.Header.Get(verify.HeaderGitHubSignature) != githubSig {
		t.Fatalf("Sign: %q, %v", r.Header.Get(verify.HeaderGitHubSignature), err)
	}
	for _, tc := range []struct {
		name, header string
		want         error
	}{
		{"tampered", githubSig, verify.ErrMismatch},
		{"no prefix", githubSig[len("sha256="):], verify.ErrMalformed},
		{"sha1 prefix", "sha1=" + githubSig[len("sha256="):], verify.ErrMalformed},
		{"not hex", "sha256=" + "zz" + githubSig[len("sha256=")+2:], verify.ErrMalformed},
		{"truncated", githubSig[:len(githubSig)-2], verify.ErrMalformed},
	} {
		wantErr(t, v.Verify(withHeader(verify.HeaderGitHubSignature, tc.header), []byte(githubBody+"?")), tc.want, "github", githubSecret)
	}
}

func TestShopify(t *testing.T) {
	t.Parallel()
	v, err := verify.NewShopify(shopifySecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(withHeader(verify.HeaderShopifyHMAC, shopifySig), []byte(shopifyBody)); err != nil {
		t.Fatalf("hand-computed vector: %v", err)
	}
	r := post("https://hooks.example.com/")
	if err := v.Sign(r, []byte(shopifyBody)); err != nil || r.Header.Get(verify.HeaderShopifyHMAC) != shopifySig {
		t.Fatalf("Sign: %q, %v", r.Header.Get(verify.HeaderShopifyHMAC), err)
	}
	for _, tc := range []struct {
		name, header string
		want         error
	}{
		{"hex instead of base64", "0f450c5e686", verify.ErrMalformed},
		{"unpadded", shopifySig[:len(shopifySig)-1], verify.ErrMalformed},
		{"other MAC", "Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=", verify.ErrMismatch},
	} {
		wantErr(t, v.Verify(withHeader(verify.HeaderShopifyHMAC, tc.header), []byte(shopifyBody)), tc.want, "shopify", shopifySecret, shopifySig)
	}
}

// TestHMACKnownAnswer uses the RFC 2202 (SHA-1) and RFC 4231 (SHA-256,
// SHA-512) test case 2: key "Jefe", data "what do ya want for nothing?";
// the base64 form was computed with `openssl dgst -sha512 -hmac Jefe -binary | base64`.
func TestHMACKnownAnswer(t *testing.T) {
	t.Parallel()
	const data = "what do ya want for nothing?"
	for _, tc := range []struct {
		cfg    verify.HMACConfig
		header string
	}{
		{verify.HMACConfig{Header: "X-Sig", Algorithm: "sha1"}, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"},
		{verify.HMACConfig{Header: "X-Sig"}, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		{verify.HMACConfig{Header: "X-Sig", Algorithm: "SHA256", Encoding: "HEX", Prefix: "sha256="}, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		{verify.HMACConfig{Header: "X-Sig", Algorithm: "sha512"}, "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"},
		{verify.HMACConfig{Header: "X-Sig", Algorithm: "sha512", Encoding: "base64", Prefix: "v1="}, "v1=Fkt6e/z4GeLjlfvnO1bgo4e9ZCIugx/WECcM1+olBVSXWL91wFqZSm0DT2X48Ob9yuqxo01Ka0tjbgcKOLznNw=="},
	} {
		v, err := verify.NewHMAC("Jefe", tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Verify(withHeader("X-Sig", tc.header), []byte(data)); err != nil {
			t.Errorf("%+v: %v", tc.cfg, err)
		}
		r := post("https://hooks.example.com/")
		if err := v.Sign(r, []byte(data)); err != nil || r.Header.Get("X-Sig") != tc.header {
			t.Errorf("%+v: Sign %q, %v", tc.cfg, r.Header.Get("X-Sig"), err)
		}
		wantErr(t, v.Verify(withHeader("X-Sig", tc.header), []byte(data+".")), verify.ErrMismatch, "hmac", "Jefe", tc.header)
	}
}

func TestHMACMalformed(t *testing.T) {
	t.Parallel()
	v, err := verify.NewHMAC("Jefe", verify.HMACConfig{Header: "X-Sig", Prefix: "sha256="})
	if err != nil {
		t.Fatal(err)
	}
	const good = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
	for _, h := range []string{good, "SHA256=" + good, "sha256=" + good[:63], "sha256=" + good + "00", "sha256=" + good[:62] + "zz"} {
		wantErr(t, v.Verify(withHeader("X-Sig", h), []byte("what do ya want for nothing?")), verify.ErrMalformed, "hmac", "Jefe")
	}
}

func TestHMACConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		secret string
		cfg    verify.HMACConfig
	}{
		{"empty secret", "", verify.HMACConfig{Header: "X-Sig"}},
		{"empty header", "sekrit", verify.HMACConfig{}},
		{"header with a space", "sekrit", verify.HMACConfig{Header: "X Sig"}},
		{"header with a colon", "sekrit", verify.HMACConfig{Header: "X-Sig:"}},
		{"unknown algorithm", "sekrit", verify.HMACConfig{Header: "X-Sig", Algorithm: "md5"}},
		{"unknown encoding", "sekrit", verify.HMACConfig{Header: "X-Sig", Encoding: "base32"}},
	} {
		_, err := verify.NewHMAC(tc.secret, tc.cfg)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		wantErr(t, err, verify.ErrConfig, "hmac", tc.secret)
	}
}
