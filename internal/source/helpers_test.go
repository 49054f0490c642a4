package source

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/verify"
)

// testNow is the clock every test source signs and verifies with.
var testNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// testOrg is the organization of testdata/salesforce-*.xml.
const testOrg = "00D5e000000AbCdEAK"

var testDedupe = config.Dedupe{Window: config.DefaultWindow, OnStoreError: config.OnStoreErrorReject}

// newTestSource builds a source on the test clock, failing the test on error.
func newTestSource(t testing.TB, cfg config.Source) *Source {
	t.Helper()
	s, err := New(cfg, testDedupe, verify.WithClock(func() time.Time { return testNow }))
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return s
}

// presetConfig is a working configuration of one provider with no overrides.
func presetConfig(provider string) config.Source {
	cfg := config.Source{Name: provider + "-src", Provider: provider, Secret: config.NewSecret(provider + "-secret")}
	switch provider {
	case "standard":
		cfg.Secret = config.NewSecret("whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-secret")))
	case "salesforce":
		cfg.Secret = config.Secret{}
		cfg.OrganizationID = testOrg
	case "hmac":
		cfg.Signature = &config.Signature{Header: "X-Signature", Algorithm: "sha256", Encoding: "hex", Prefix: "sha256="}
		cfg.Key = []string{"header:X-Event-Id"}
	}
	return cfg
}

// fixture reads a file from testdata.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newRequest builds a POST to url with body and headers ("Name: value").
func newRequest(url string, body []byte, headers ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	r.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		r.Header.Set(name, value)
	}
	return r
}

// signedRequest is newRequest signed by s's signer.
func signedRequest(t testing.TB, s *Source, url string, body []byte, headers ...string) *http.Request {
	t.Helper()
	r := newRequest(url, body, headers...)
	if err := s.Signer().Sign(r, body); err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return r
}
