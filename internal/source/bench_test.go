package source

import (
	"testing"

	"github.com/hookgate/hookgate/internal/config"
)

// BenchmarkEvents measures splitting and keying one request of each shape:
// header-keyed (no body parse), one JSON event, a HubSpot batch of three, a
// Salesforce message of three.
func BenchmarkEvents(b *testing.B) {
	cases := []struct {
		name     string
		provider string
		body     []byte
		headers  []string
	}{
		{"github-header", config.ProviderGitHub, fixture(b, "stripe-event.json"), []string{"X-GitHub-Delivery: d-1", "X-GitHub-Event: push"}},
		{"stripe-json", config.ProviderStripe, fixture(b, "stripe-event.json"), nil},
		{"hubspot-batch3", config.ProviderHubSpot, fixture(b, "hubspot-batch.json"), nil},
		{"salesforce-soap3", config.ProviderSalesforce, fixture(b, "salesforce-three.xml"), nil},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s := newTestSource(b, presetConfig(c.provider))
			r := newRequest("/in/x", c.body, c.headers...)
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Events(r, c.body, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
