package console

import (
	"net/http"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
)

// presetNote is what a provider's preset covers and reads, as
// docs/providers.md tells it, for a source that does not override it.
type presetNote struct {
	signed, key, tenant string
}

// presetNotes are the notes of every provider.
var presetNotes = map[string]presetNote{
	config.ProviderStandard:   {"webhook-id, webhook-timestamp and the body", "header:webhook-id", "none"},
	config.ProviderStripe:     {"the body and the t= timestamp", "json:id", "none"},
	config.ProviderGitHub:     {"the body only", "header:X-GitHub-Delivery", "none"},
	config.ProviderShopify:    {"the body only", "header:X-Shopify-Webhook-Id", "header:X-Shopify-Shop-Domain"},
	config.ProviderHubSpot:    {"v3: method, URL, body and timestamp; v1 and v2: less (see docs/providers.md)", "json:subscriptionId, json:eventId, json:objectId, json:occurredAt", "json:portalId"},
	config.ProviderSalesforce: {"nothing: the organization id must match, and ?token= when set", "xml:Notification/Id", "xml:OrganizationId"},
	config.ProviderShippo:     {"with a secret, the body and the t= timestamp; with a token only, nothing", "carrier, tracking number, status and status date", "none"},
	config.ProviderHMAC:       {"the body only", "(configured)", "none"},
}

// sourceInfo is one source as the sources page shows it: never a secret.
type sourceInfo struct {
	Name, Provider string
	// URL is what to paste into the provider's settings.
	URL         string
	Signed      string
	Key, Scope  string
	Tenant      string
	Window      time.Duration
	ReplayGuard string
	// Destinations are the destinations' names and hosts (a URL may carry
	// a credential in its userinfo, path or query: deliver.Redact).
	Destinations []destinationInfo
	// Last is the newest event received; zero when none is stored.
	Last time.Time
}

type destinationInfo struct {
	Name, Host, On string
}

func (c *console) sourcesPage(w http.ResponseWriter, r *http.Request, sess *session) error {
	base := "http://" + r.Host
	if overTLS(r) {
		base = "https://" + r.Host
	}
	out := make([]sourceInfo, 0, len(c.sources))
	for _, s := range c.sources {
		note := presetNotes[s.Provider]
		info := sourceInfo{Name: s.Name, Provider: s.Provider, URL: s.PublicURL, Signed: note.signed,
			Key: note.key, Tenant: note.tenant, Scope: "preset", Window: time.Duration(s.Window), ReplayGuard: s.ReplayGuard}
		if info.URL == "" {
			info.URL = base + "/in/" + s.Name
			if s.Tenant == string(config.SelectPath) {
				info.URL += "/{tenant}"
			}
		}
		if len(s.Key) > 0 {
			info.Key = strings.Join(s.Key, ", ")
		}
		if len(s.Scope) > 0 {
			info.Scope = strings.Join(s.Scope, ", ")
		}
		if s.Tenant != "" {
			info.Tenant = s.Tenant
		}
		if info.ReplayGuard == "" {
			info.ReplayGuard = s.DefaultReplayGuard()
		}
		for _, d := range s.Destinations {
			di := destinationInfo{Name: d.Name, On: d.On, Host: deliver.Redact(d.URL)}
			info.Destinations = append(info.Destinations, di)
		}
		last, err := c.store.List(r.Context(), inbox.Filter{Source: s.Name, Limit: 1})
		if err != nil {
			return err
		}
		if len(last) > 0 {
			info.Last = last[0].ReceivedAt
		}
		out = append(out, info)
	}
	return c.render(w, "sources", page{Title: "Sources", Nav: "sources", CSRF: sess.csrf, Data: out})
}
