package config

import "strings"

// Values of a source's replay_guard.
const (
	// ReplayGuardOn records a digest of each accepted request's signed
	// content, and answers a later request with the same signed content
	// as a duplicate, whatever its unsigned parts say.
	ReplayGuardOn = "on"
	// ReplayGuardOff keys events only by their key.
	ReplayGuardOff = "off"
)

// presetUnsigned says, per provider, which parts of its preset's key are
// read from something the provider's signature does not cover. It mirrors
// the presets in internal/source, whose tests check that the two agree.
var presetUnsigned = map[string]struct{ key, scope, tenant bool }{
	// X-GitHub-Delivery and X-GitHub-Event are outside the body's HMAC.
	ProviderGitHub: {key: true, scope: true},
	// X-Shopify-Webhook-Id, X-Shopify-Topic and X-Shopify-Shop-Domain are
	// outside the body's HMAC, and one app secret serves every shop.
	ProviderShopify: {key: true, scope: true, tenant: true},
}

// DefaultReplayGuard is the replay guard a source gets when replay_guard
// is absent: on when its key, scope or tenant is read from something its
// provider's signature does not cover (a header other than the signed
// webhook-id of standard, a query parameter, the path tenant), off when
// all of them come from signed content or constants.
func (s Source) DefaultReplayGuard() string {
	p := presetUnsigned[s.Provider]
	unsigned := func(sels []string, preset bool) bool {
		if len(sels) == 0 {
			return preset
		}
		for _, sel := range sels {
			if s.unsignedSelector(sel) {
				return true
			}
		}
		return false
	}
	tenant := []string{}
	if s.Tenant != "" {
		tenant = append(tenant, s.Tenant)
	}
	if unsigned(s.Key, p.key) || unsigned(s.Scope, p.scope) || unsigned(tenant, p.tenant) {
		return ReplayGuardOn
	}
	return ReplayGuardOff
}

// unsignedSelector reports whether sel reads a part of the request that
// the source's signature does not cover. HubSpot v2 and v3 sign the URL,
// but v1 does not and the sender picks the version, so a query or path is
// unsigned for every provider.
func (s Source) unsignedSelector(sel string) bool {
	parsed, err := ParseSelector(sel)
	if err != nil {
		return true
	}
	switch parsed.Kind {
	case SelectJSON, SelectXML, SelectConst:
		return false
	case SelectHeader:
		name := strings.ToLower(parsed.Name)
		return s.Provider != ProviderStandard || (name != "webhook-id" && name != "webhook-timestamp")
	}
	return true
}
