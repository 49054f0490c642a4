package config

import "github.com/hookgate/hookgate/internal/provider"

// Values of a source's replay_guard.
const (
	// ReplayGuardOn records a digest of each accepted request's signed
	// content, and answers a later request with the same signed content
	// as a duplicate, whatever its unsigned parts say.
	ReplayGuardOn = "on"
	// ReplayGuardOff keys events only by their key.
	ReplayGuardOff = "off"
)

// DefaultReplayGuard is the replay guard a source gets when replay_guard
// is absent: on when its key, scope or tenant is read from something its
// provider's signature does not cover (a header the provider does not
// sign, a query parameter, the path tenant), off when all of them come
// from signed content or constants. A part the source leaves to the
// preset is judged by what the preset's selectors read.
func (s Source) DefaultReplayGuard() string {
	p, _ := provider.Lookup(s.Provider)
	unsigned := func(sels []string, preset ...provider.Selector) bool {
		if len(sels) == 0 && p != nil {
			for _, sel := range preset {
				sels = append(sels, sel.Reads()...)
			}
		}
		for _, sel := range sels {
			if s.unsignedSelector(p, sel) {
				return true
			}
		}
		return false
	}
	var preset provider.Preset
	if p != nil {
		preset = p.Preset
	}
	tenant := []string{}
	if s.Tenant != "" {
		tenant = append(tenant, s.Tenant)
	}
	if unsigned(s.Key, preset.Key...) || unsigned(s.Scope, preset.Scope[:]...) || unsigned(tenant, preset.Tenant) {
		return ReplayGuardOn
	}
	return ReplayGuardOff
}

// unsignedSelector reports whether sel reads a part of the request that
// the signature of p (nil for an unknown provider) does not cover. HubSpot
// v2 and v3 sign the URL, but v1 does not and the sender picks the
// version, so a query or path is unsigned for every provider.
func (s Source) unsignedSelector(p *provider.Provider, sel string) bool {
	parsed, err := ParseSelector(sel)
	if err != nil {
		return true
	}
	switch parsed.Kind {
	case SelectJSON, SelectXML, SelectConst:
		return false
	case SelectHeader:
		return p == nil || !p.SignsHeader(parsed.Name)
	}
	return true
}
