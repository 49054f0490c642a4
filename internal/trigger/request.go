package trigger

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/source"
	"github.com/hookgate/hookgate/verify"
)

// Request is the POST of fixture f to target, the URL of source sc, as
// sc's provider sends it at now: the rendered body, the provider's
// headers (tenant is X-Shopify-Shop-Domain for shopify), and the
// signature of sc's secret.
func Request(ctx context.Context, sc config.Source, f Fixture, target, tenant string, now time.Time) (*http.Request, error) {
	now = now.UTC()
	sent := ProviderHeaders(sc.Provider, f.Event, tenant, now)
	var seed [32]byte
	rand.Read(seed[:])
	body, err := render(f, newGen(now, seed, sc, sent.Get("X-Shopify-Shop-Domain")))
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
func ProviderHeaders(provider, event, tenant string, now time.Time) http.Header {
	h := http.Header{}
	switch provider {
	case config.ProviderGitHub:
		h.Set("X-GitHub-Delivery", newUUID())
		h.Set("X-GitHub-Event", cmp.Or(event, "ping"))
	case config.ProviderShopify:
		h.Set("X-Shopify-Webhook-Id", newUUID())
		h.Set("X-Shopify-Event-Id", newUUID())
		h.Set("X-Shopify-Topic", cmp.Or(event, "orders/create"))
		h.Set("X-Shopify-Shop-Domain", cmp.Or(tenant, "example.myshopify.com"))
		h.Set("X-Shopify-Triggered-At", now.UTC().Format(time.RFC3339Nano))
		h.Set("X-Shopify-API-Version", shopifyAPIVersion)
	case config.ProviderSalesforce:
		// Outbound messages carry an empty SOAP action.
		h.Set("SOAPAction", `""`)
	}
	return h
}

// shopifyAPIVersion is the API version the Shopify requests name; the
// preset keeps it with the event and reads nothing from it.
const shopifyAPIVersion = "2025-10"

// newUUID returns a random (version 4) UUID, the form of GitHub's and
// Shopify's delivery ids.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func contentType(provider string) string {
	if provider == config.ProviderSalesforce {
		return "text/xml; charset=utf-8"
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
	// The legacy signatures are left to a source without a secret,
	// whose signer says what is missing.
	secret := sc.Secret.Value()
	switch sc.Provider {
	case config.ProviderStripe:
		h.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
		h.Set("Content-Type", "application/json; charset=utf-8")
	case config.ProviderGitHub:
		h.Set("User-Agent", "GitHub-Hookshot/4f3c2a1")
		h.Set("X-GitHub-Hook-ID", "498912341")
		h.Set("X-GitHub-Hook-Installation-Target-Type", "repository")
		h.Set("X-GitHub-Hook-Installation-Target-ID", "812345678")
		if secret == "" {
			break
		}
		// GitHub still sends the SHA-1 signature beside the SHA-256 one.
		sha1, err := verify.NewHMAC(secret, verify.HMACConfig{Header: "X-Hub-Signature", Algorithm: "sha1", Encoding: "hex", Prefix: "sha1="})
		if err != nil {
			return err
		}
		r := &http.Request{Header: h}
		if err := sha1.Sign(r, body); err != nil {
			return err
		}
	case config.ProviderShopify:
		h.Set("User-Agent", "Shopify-Captain-Hook")
	case config.ProviderHubSpot:
		if secret == "" {
			break
		}
		// v1: hex SHA-256 of the secret and the body. The preset checks
		// the v3 signature, which decides when present.
		sum := sha256.Sum256(append([]byte(secret), body...))
		h.Set(verify.HeaderHubSpotSignature, hex.EncodeToString(sum[:]))
		h.Set(verify.HeaderHubSpotSignatureVersion, "v1")
	}
	return nil
}
