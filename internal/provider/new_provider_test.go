package provider_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/internal/source"
	"github.com/hookgate/hookgate/verify"
)

// TestNewProviderIsOneRegistration: what a provider's file registers is
// all that configuration and sources need of it: a source of a provider
// unknown to them validates by its credential rules, gets the replay guard
// its preset's unsigned tenant header calls for, authenticates and keys
// its deliveries.
func TestNewProviderIsOneRegistration(t *testing.T) {
	provider.Register(&provider.Provider{
		Name: "acme",
		NewScheme: func(_ provider.Credentials, secret string, opts ...verify.Option) (verify.Scheme, error) {
			return verify.NewHMAC(secret, verify.HMACConfig{Header: "X-Acme-Signature"}, opts...)
		},
		Preset: provider.Preset{
			Body:   provider.BodyJSON,
			Key:    []provider.Selector{provider.Field("json:event_id")},
			Scope:  [2]provider.Selector{{}, provider.Field("json:kind")},
			Tenant: provider.Field("header:X-Acme-Account"),
		},
	}, 1000)

	if err := (config.Source{Name: "a", Provider: "acme"}).Validate(); err == nil || !strings.Contains(err.Error(), "secret: required for provider acme") {
		t.Errorf("a source without a secret: %v, want secret required", err)
	}
	if err := (config.Source{Name: "a", Provider: "nope"}).Validate(); err == nil || !strings.Contains(err.Error(), "|hmac|acme)") {
		t.Errorf("an unknown provider: %v, want acme among the providers named", err)
	}
	if err := (config.Source{Name: "a", Provider: "acme", Secret: config.NewSecret("s"), Key: []string{"xml:Id"}}).Validate(); err == nil {
		t.Error("an xml selector for a JSON provider validates")
	}
	sc := config.Source{Name: "a", Provider: "acme", Secret: config.NewSecret("s3cret")}
	if err := sc.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if got := sc.DefaultReplayGuard(); got != config.ReplayGuardOn {
		t.Errorf("default replay guard %q, want on: the tenant header is outside the signature", got)
	}

	src, err := source.New(sc, config.Default().Dedupe)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"event_id":"e1","kind":"order.paid"}`)
	r := httptest.NewRequest(http.MethodPost, "/in/a", strings.NewReader(string(body)))
	r.Header.Set("X-Acme-Account", "acct_9")
	if err := src.Signer().Sign(r, body); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Authenticate(r, body); err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	events, err := src.Events(r, body, "")
	if err != nil || len(events) != 1 {
		t.Fatalf("Events: %v, %v", events, err)
	}
	if k := events[0].Key; k.EventID != "e1" || k.Tenant != "acct_9" || k.Action != "order.paid" || !src.ReplayGuard {
		t.Errorf("key %+v (replay guard %v), want e1 of acct_9, order.paid, guarded", k, src.ReplayGuard)
	}
}
