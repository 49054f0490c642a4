package config

import (
	"cmp"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hookgate/hookgate/internal/provider"
)

// Reconciliation defaults.
const (
	// DefaultReconcileOverlap is how far before its checkpoint a run
	// lists again: an event the provider created just before the last
	// run ended, but listed only after it, is still found.
	DefaultReconcileOverlap = Duration(15 * time.Minute)
	// DefaultReconcileLookback is how far back the first run lists; the
	// provider's reconciler lists no further back than it keeps events.
	DefaultReconcileLookback = Duration(72 * time.Hour)
)

// DefaultReconcileRate is the most requests a reconciler makes to its
// provider's API: 10 a second.
var DefaultReconcileRate = Rate{N: 10, Per: time.Second}

// Reconcile is a source's reconciliation with its provider: listing what
// the provider says it sent and accepting, under the webhook's keys, the
// events whose webhook never came.
type Reconcile struct {
	// Every is how often the gateway runs it; zero (or absent): only on
	// demand (hookgate reconcile --source).
	Every Duration `yaml:"every,omitempty"`
	// Overlap is how far before the checkpoint (the start of the last
	// complete run) a run lists again; default [DefaultReconcileOverlap].
	Overlap Duration `yaml:"overlap,omitempty"`
	// Lookback is how far back the first run lists; default
	// [DefaultReconcileLookback], capped by what the provider keeps.
	Lookback Duration `yaml:"lookback,omitempty"`
	// Rate is the most requests made to the provider's API; default
	// [DefaultReconcileRate].
	Rate Rate `yaml:"rate,omitempty"`
	// APIKey is the API credential of the providers that take a key
	// (Stripe: a restricted key), by reference.
	APIKey Secret `yaml:"api_key,omitempty"`
	// Token is the API credential of the providers that take a token,
	// by reference.
	Token Secret `yaml:"token,omitempty"`
	// Types are the event types listed, as patterns ("charge.*"): the
	// types the provider's webhook endpoint is subscribed to. None lists
	// every type.
	Types []string `yaml:"types,omitempty,flow"`
	// APIURL is the provider API's base URL; "" is the provider's own.
	// Tests and proxies set it.
	APIURL string `yaml:"api_url,omitempty"`
	// Hook is the GitHub webhook whose deliveries are listed:
	// repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID.
	Hook string `yaml:"hook,omitempty"`
	// Shop is the Shopify shop, NAME.myshopify.com.
	Shop string `yaml:"shop,omitempty"`
	// Resources are the Shopify resources whose objects are listed
	// (orders, products, …): those the webhooks are subscribed to.
	Resources []string `yaml:"resources,omitempty,flow"`
	// APIVersion is the provider API's version (Shopify's 2025-10); ""
	// is the reconciler's default.
	APIVersion string `yaml:"api_version,omitempty"`
}

// Provider is what the provider's reconciler reads of r, without the
// clock and HTTP client the caller adds.
func (r Reconcile) Provider() provider.ReconcileConfig {
	return provider.ReconcileConfig{APIURL: r.APIURL, Key: r.Credential(), Hook: r.Hook, Shop: r.Shop,
		Resources: r.Resources, APIVersion: r.APIVersion}
}

// Credential is the API credential the reconciler reads: the key or the
// token, whichever is set.
func (r Reconcile) Credential() string {
	if !r.APIKey.IsZero() {
		return r.APIKey.Value()
	}
	return r.Token.Value()
}

// fillDefaults sets the fields the YAML mapping at path leaves out.
func (r *Reconcile) fillDefaults(path string, lines map[string]int) {
	absent := func(key string) bool {
		_, ok := lines[path+"."+key]
		return !ok
	}
	if absent("overlap") {
		r.Overlap = DefaultReconcileOverlap
	}
	if absent("lookback") {
		r.Lookback = DefaultReconcileLookback
	}
	if absent("rate") {
		r.Rate = DefaultReconcileRate
	}
}

// resolveSecrets reads the credentials with resolve, naming each field
// under path.
func (r *Reconcile) resolveSecrets(path string, resolve func(field string, s *Secret)) {
	resolve(path+".api_key", &r.APIKey)
	resolve(path+".token", &r.Token)
}

// checkReconcile checks the source's reconcile block, with fields
// relative to the source.
func (s Source) checkReconcile() []*FieldError {
	r := s.Reconcile
	if r == nil {
		return nil
	}
	var errs []*FieldError
	add := func(field string, format string, args ...any) {
		errs = append(errs, &FieldError{Field: "reconcile" + field, Err: fmt.Errorf(format, args...)})
	}
	p, known := provider.Lookup(s.Provider)
	if known && p.Reconcile == nil {
		add("", "provider %s lists nothing hookgate can reconcile from (reconcile is for %s)",
			p.Name, strings.Join(provider.Where(func(p *provider.Provider) bool { return p.Reconcile != nil }), ", "))
	}
	if r.Every < 0 {
		add(".every", "%s: want how often to run, such as 1h, or 0 for on demand only", r.Every)
	}
	if r.Overlap < 0 {
		add(".overlap", "%s: must not be negative", r.Overlap)
	}
	if r.Lookback <= 0 {
		add(".lookback", "%s: want how far back the first run lists, such as 72h", r.Lookback)
	}
	if r.Rate.N <= 0 || r.Rate.Per <= 0 {
		add(".rate", "%q: want requests per unit of time, such as 10/s", r.Rate.String())
	}
	if known && p.Reconcile != nil {
		want := cmp.Or(p.ReconcileCredential, "token")
		other := map[string]string{"api_key": "token", "token": "api_key"}[want]
		set := map[string]bool{"api_key": !r.APIKey.IsZero(), "token": !r.Token.IsZero()}
		if !set[want] {
			add("."+want, "required for provider %s (env:NAME or file:PATH)", p.Name)
		}
		if set[other] {
			add("."+other, "not used by provider %s: set %s", p.Name, want)
		}
		for _, f := range []struct {
			name string
			set  bool
		}{{provider.FieldTypes, len(r.Types) > 0}, {provider.FieldHook, r.Hook != ""}, {provider.FieldShop, r.Shop != ""},
			{provider.FieldResources, len(r.Resources) > 0}, {provider.FieldAPIVersion, r.APIVersion != ""}} {
			if f.set && !slices.Contains(p.ReconcileFields, f.name) {
				add("."+f.name, "not used by provider %s (it is for %s)", p.Name, strings.Join(provider.Where(func(p *provider.Provider) bool {
					return slices.Contains(p.ReconcileFields, f.name)
				}), ", "))
			}
		}
		if p.ReconcileCheck != nil {
			for _, pr := range p.ReconcileCheck(r.Provider()) {
				add("."+pr.Field, "%s", pr.Message)
			}
		}
		if p.ReconcileByHeaders {
			if field, sel := s.notByHeaders(); field != "" {
				add("", "%s %s reads more than headers, but provider %s lists its deliveries by their headers alone: "+
					"key the source by headers (as its preset does) to reconcile it", field, sel, p.Name)
			}
		}
	}
	for i, typ := range r.Types {
		if _, err := path.Match(typ, ""); err != nil || typ == "" {
			add(fmt.Sprintf(".types[%d]", i), "%q: want an event type or a pattern such as charge.*", typ)
		}
	}
	if r.APIURL != "" {
		u, err := url.Parse(r.APIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add(".api_url", "%q: want an absolute http or https URL", r.APIURL)
		}
	}
	return errs
}

// notByHeaders names the first of the source's key, scope and tenant
// selectors that reads something other than a header or a constant, and
// the selector; "" when there is none.
func (s Source) notByHeaders() (field, sel string) {
	check := func(name string, sels []string) bool {
		for i, v := range sels {
			if k, err := ParseSelector(v); err == nil && k.Kind != SelectHeader && k.Kind != SelectConst {
				field, sel = fmt.Sprintf("%s[%d]", name, i), quote(v)
				return true
			}
		}
		return false
	}
	if check("key", s.Key) || check("scope", s.Scope) {
		return field, sel
	}
	if s.Tenant != "" && check("tenant", []string{s.Tenant}) {
		return "tenant", sel
	}
	return "", ""
}

// Rate is a number of requests per unit of time, written "10/s", "600/m"
// or "1000/h".
type Rate struct {
	N   int
	Per time.Duration
}

// wantRate says what a rate is.
const wantRate = "a rate like 10/s, 600/m or 1000/h"

// rateUnits are the units a rate is written in.
var rateUnits = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}

// ParseRate reads a rate such as "10/s".
func ParseRate(s string) (Rate, error) {
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	per, known := rateUnits[unit]
	v, err := strconv.Atoi(n)
	if !ok || !known || err != nil || v <= 0 {
		return Rate{}, fmt.Errorf("%s: want %s", quote(s), wantRate)
	}
	return Rate{N: v, Per: per}, nil
}

// Interval is the time between two requests at the rate.
func (r Rate) Interval() time.Duration {
	if r.N <= 0 {
		return 0
	}
	return r.Per / time.Duration(r.N)
}

// String writes the rate as [ParseRate] reads it.
func (r Rate) String() string {
	for unit, d := range rateUnits {
		if d == r.Per {
			return strconv.Itoa(r.N) + "/" + unit
		}
	}
	return fmt.Sprintf("%d/%s", r.N, r.Per)
}

// UnmarshalYAML reads a rate such as "10/s".
func (r *Rate) UnmarshalYAML(n *yaml.Node) error { return asTypeError(r.decodeNode(n)) }

func (r *Rate) decodeNode(n *yaml.Node) *FieldError {
	if n.Kind != yaml.ScalarNode {
		return wrongKind(n, wantRate)
	}
	v, err := ParseRate(n.Value)
	if err != nil {
		return &FieldError{Line: n.Line, Err: err}
	}
	*r = v
	return nil
}

// MarshalYAML writes the rate as [Rate.String] does.
func (r Rate) MarshalYAML() (any, error) { return r.String(), nil }
