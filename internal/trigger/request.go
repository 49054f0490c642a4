package trigger

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"net/url"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/internal/source"
)

// Request is the POST of fixture f to target, the URL of source sc, as
// sc's provider sends it at now: the rendered body, the provider's
// headers (tenant is the header its preset reads the tenant from, such
// as Shopify's shop domain), and the signature of sc's secret.
func Request(ctx context.Context, sc config.Source, f Fixture, target, tenant string, now time.Time) (*http.Request, error) {
	now = now.UTC()
	sent := ProviderHeaders(sc.Provider, f.Event, tenant, now)
	var seed [32]byte
	rand.Read(seed[:])
	body, err := render(f, newGen(now, seed, sc, presetTenant(sc.Provider, sent)))
	if err != nil {
		return nil, err
	}
	if err := senderHeaders(sent, sc, body); err != nil {
		return nil, err
	}
	return SignedRequest(ctx, sc, target, body, sent)
}

// IntakeURL is where a gateway at base takes sc's deliveries:
// /in/{source}, and /{tenant} after it for a source whose tenant is the
// path.
func IntakeURL(base string, sc config.Source, tenant string) string {
	u := base + "/in/" + sc.Name
	if sc.Tenant == string(config.SelectPath) && tenant != "" {
		u += "/" + url.PathEscape(tenant)
	}
	return u
}

// SignedRequest is the POST of body to target as sc's provider sends it:
// its content type, then sent (which may replace it), signed last so that
// the signature covers what it signs besides the body (standard's
// webhook-id, HubSpot's URL).
func SignedRequest(ctx context.Context, sc config.Source, target string, body []byte, sent http.Header) (*http.Request, error) {
	signer, err := source.NewSigner(sc)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType(sc.Provider))
	for name, values := range sent {
		req.Header[name] = values
	}
	if err := signer.Sign(req, body); err != nil {
		return nil, err
	}
	return req, nil
}

// ProviderHeaders are the headers, other than the signature's, that the
// provider sends with every delivery and that its preset reads: the
// delivery's id, the event's type, the shop. Each id is fresh, so that
// every signed request is a new event.
func ProviderHeaders(name, event, tenant string, now time.Time) http.Header {
	if p, ok := provider.Lookup(name); ok && p.Headers != nil {
		return p.Headers(event, tenant, now)
	}
	return http.Header{}
}

// presetTenant is the tenant of a delivery with headers h, for a provider
// whose preset reads it from a header; "" for any other.
func presetTenant(name string, h http.Header) string {
	p, ok := provider.Lookup(name)
	if !ok {
		return ""
	}
	sel, err := config.ParseSelector(p.Preset.Tenant.Syntax)
	if err != nil || sel.Kind != config.SelectHeader {
		return ""
	}
	return h.Get(sel.Name)
}

func contentType(name string) string {
	if p, ok := provider.Lookup(name); ok {
		return p.ContentTypeOf()
	}
	return "application/json"
}

// senderHeaders adds to h what the provider sends besides the ids,
// types and signature that ProviderHeaders and the signer set: its
// User-Agent, GitHub's hook headers (naming the hook and repository of
// the fixtures) and legacy signatures, HubSpot's v1 signature beside v3.
// A receiver must not need them, but one that logs or checks them sees
// what the provider would send.
func senderHeaders(h http.Header, sc config.Source, body []byte) error {
	p, ok := provider.Lookup(sc.Provider)
	if !ok || p.SenderHeaders == nil {
		return nil
	}
	// The legacy signatures are left to a source without a secret,
	// whose signer says what is missing.
	return p.SenderHeaders(h, sc.Secret.Value(), body)
}
