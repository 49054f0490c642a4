package source

import (
	"testing"

	"github.com/hookgate/hookgate/internal/config"
)

// TestPresetReplayGuard: config decides a source's default replay guard
// from a table of what each preset reads outside the signature; the table
// must agree with the presets themselves. A preset part is unsigned when
// one of its selectors reads a header (other than Standard Webhooks'
// signed webhook-id), a query parameter or the path.
func TestPresetReplayGuard(t *testing.T) {
	t.Parallel()
	unsigned := func(provider string, sels ...selector) bool {
		for _, sel := range sels {
			if sel == nil {
				continue
			}
			switch sel.kind() {
			case config.SelectQuery, config.SelectPath:
				return true
			case config.SelectHeader:
				if provider != "standard" || sel.String() != "header:webhook-id" {
					return true
				}
			}
		}
		return false
	}
	on := map[bool]string{true: config.ReplayGuardOn, false: config.ReplayGuardOff}
	for provider, p := range presets() {
		// Each part alone, the other two set to signed selectors.
		signedKey, signedScope, signedTenant := []string{"json:id"}, []string{"json:a", "json:b"}, "const:t"
		for _, part := range []struct {
			name string
			cfg  config.Source
			sels []selector
		}{
			{"key", config.Source{Provider: provider, Scope: signedScope, Tenant: signedTenant}, p.key},
			{"scope", config.Source{Provider: provider, Key: signedKey, Tenant: signedTenant}, p.scope[:]},
			{"tenant", config.Source{Provider: provider, Key: signedKey, Scope: signedScope}, []selector{p.tenant}},
		} {
			if got, want := part.cfg.DefaultReplayGuard(), on[unsigned(provider, part.sels...)]; got != want {
				t.Errorf("%s %s: config's default replay guard %q, want %q from the preset's selectors", provider, part.name, got, want)
			}
		}
		if s := newTestSource(t, presetConfig(provider)); s.ReplayGuard != (presetConfig(provider).DefaultReplayGuard() == config.ReplayGuardOn) {
			t.Errorf("%s: source.New's replay guard %v differs from the config default", provider, s.ReplayGuard)
		}
	}
}

// TestDigest: the digest is the source's and its signed content's; with
// the guard off there is none.
func TestDigest(t *testing.T) {
	t.Parallel()
	cfg := presetConfig("standard")
	cfg.Tenant = "path"
	a := newTestSource(t, cfg)
	cfg.Name = "other"
	b := newTestSource(t, cfg)
	body := []byte(`{"id":"evt_1"}`)
	r := signedRequest(t, a, "https://hooks.example.com/in/x/tenantA", body, "webhook-id: m1")
	da, ok := a.Digest(r, body)
	if !ok {
		t.Fatal("Digest of a path-tenant source: no digest, want the guard on by default")
	}
	replay := r.Clone(t.Context())
	replay.URL.Path = "/in/x/tenantB"
	if d, _ := a.Digest(replay, body); d != da {
		t.Error("the digest changed with the path tenant")
	}
	if d, _ := b.Digest(r, body); d == da {
		t.Error("two sources share a digest")
	}
	cfg.ReplayGuard = config.ReplayGuardOff
	if _, ok := newTestSource(t, cfg).Digest(r, body); ok {
		t.Error("replay_guard: off gave a digest")
	}
}
