package config

import (
	"strings"
	"testing"
	"time"
)

// reconcileEnv is the environment the reconcile tests read credentials
// from.
func reconcileEnv(name string) (string, bool) {
	v, ok := map[string]string{
		"STRIPE_WEBHOOK_SECRET":  "whsec_stripe_value",
		"STRIPE_RESTRICTED_KEY":  "rk_test_value",
		"GITHUB_SECRET":          "github_value",
		"GITHUB_RECONCILE_TOKEN": "ghp_value",
	}[name]
	return v, ok
}

func stripeSource(reconcile string) string {
	return "sources:\n  - name: pay\n    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    reconcile:\n" + reconcile
}

func githubSource(reconcile string) string {
	return "sources:\n  - name: gh\n    provider: github\n    secret: env:GITHUB_SECRET\n    reconcile:\n      token: env:GITHUB_RECONCILE_TOKEN\n" + reconcile
}

// A GitHub source's reconcile block names its hook, of a repository or an
// organization, and a token; a key, scope or tenant of headers and
// constants can be reconciled.
func TestReconcileGitHub(t *testing.T) {
	t.Parallel()
	byHeaders := "sources:\n  - name: gh\n    provider: github\n    secret: env:GITHUB_SECRET\n    tenant: const:acme\n" +
		"    key: [header:X-GitHub-Hook-ID, header:X-GitHub-Delivery]\n    reconcile:\n      token: env:GITHUB_RECONCILE_TOKEN\n      hook: orgs/acme/hooks/7\n"
	if _, err := parse([]byte(byHeaders), "", reconcileEnv); err != nil {
		t.Errorf("keyed by headers: %v", err)
	}
	for _, hook := range []string{"repos/acme/shop.web/hooks/498912341", "orgs/acme-inc/hooks/7"} {
		cfg, err := parse([]byte(githubSource("      hook: "+hook+"\n")), "", reconcileEnv)
		if err != nil {
			t.Fatalf("hook %s: %v", hook, err)
		}
		if r := cfg.Sources[0].Reconcile; r.Hook != hook || r.Provider().Key != "ghp_value" || r.Provider().Hook != hook {
			t.Errorf("hook %s: %+v", hook, *r)
		}
	}
}

func shopifySource(reconcile string) string {
	return "sources:\n  - name: shop\n    provider: shopify\n    secret: env:GITHUB_SECRET\n    reconcile:\n      token: env:GITHUB_RECONCILE_TOKEN\n" + reconcile
}

func TestReconcileDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte(stripeSource("      api_key: env:STRIPE_RESTRICTED_KEY\n")), "", reconcileEnv)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Sources[0].Reconcile
	if r.Every != 0 || r.Overlap != DefaultReconcileOverlap || r.Lookback != DefaultReconcileLookback ||
		r.Rate != DefaultReconcileRate || r.APIURL != "" {
		t.Errorf("defaults: %+v", *r)
	}
	if r.Credential() != "rk_test_value" || r.APIKey.String() != "****" {
		t.Errorf("credential %q, printed %q", r.Credential(), r.APIKey.String())
	}
	if r.Rate.Interval() != 100*time.Millisecond {
		t.Errorf("interval %v", r.Rate.Interval())
	}
}

func TestReconcileAsWritten(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte(stripeSource(`      every: 1h
      overlap: 0s
      lookback: 7d
      rate: 600/m
      api_key: file:/dev/null/unused
      api_url: http://127.0.0.1:9/
`)), "", reconcileEnv)
	// A file that cannot be read is the only error: the rest is taken as
	// written.
	if err == nil || !strings.Contains(err.Error(), "sources[0].reconcile.api_key") {
		t.Fatalf("err = %v", err)
	}
	cfg, err = parse([]byte(stripeSource(`      every: 1h
      overlap: 0s
      lookback: 7d
      rate: 600/m
      api_key: env:STRIPE_RESTRICTED_KEY
      api_url: http://127.0.0.1:9/
`)), "", reconcileEnv)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Sources[0].Reconcile
	want := Reconcile{Every: Duration(time.Hour), Lookback: Duration(7 * day), Rate: Rate{N: 600, Per: time.Minute},
		APIURL: "http://127.0.0.1:9/"}
	if r.Every != want.Every || r.Overlap != 0 || r.Lookback != want.Lookback || r.Rate != want.Rate || r.APIURL != want.APIURL {
		t.Errorf("got %+v", *r)
	}
}

func TestReconcileInvalid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, yaml, want string }{
		{"literal key", stripeSource("      api_key: rk_live_pasted\n"),
			"sources[0].reconcile.api_key: want env:NAME or file:PATH (the value is not shown)"},
		{"no key", stripeSource("      every: 1h\n"),
			"sources[0].reconcile.api_key: required for provider stripe (env:NAME or file:PATH)"},
		{"token for stripe", stripeSource("      api_key: env:STRIPE_RESTRICTED_KEY\n      token: env:STRIPE_RESTRICTED_KEY\n"),
			"sources[0].reconcile.token: not used by provider stripe: set api_key"},
		{"key list", stripeSource("      api_key: [env:STRIPE_RESTRICTED_KEY, env:STRIPE_RESTRICTED_KEY]\n"),
			"sources[0].reconcile.api_key: secret: takes one secret, not a list"},
		{"negative every", stripeSource("      api_key: env:STRIPE_RESTRICTED_KEY\n      every: -1h\n"),
			`sources[0].reconcile.every: -1h: want how often to run`},
		{"negative overlap", stripeSource("      api_key: env:STRIPE_RESTRICTED_KEY\n      overlap: -1m\n"),
			`sources[0].reconcile.overlap: -1m: must not be negative`},
		{"zero lookback", stripeSource("      api_key: env:STRIPE_RESTRICTED_KEY\n      lookback: 0s\n"),
			`sources[0].reconcile.lookback: 0s: want how far back`},
		{"bad rate", stripeSource("      api_key: env:STRIPE_RESTRICTED_KEY\n      rate: 10 per second\n"),
			`sources[0].reconcile.rate: "10 per second": want a rate like 10/s, 600/m or 1000/h`},
		{"zero rate", stripeSource("      api_key: env:STRIPE_RESTRICTED_KEY\n      rate: 0/s\n"),
			`sources[0].reconcile.rate: "0/s": want a rate like 10/s`},
		{"bad url", stripeSource("      api_key: env:STRIPE_RESTRICTED_KEY\n      api_url: api.stripe.com\n"),
			`sources[0].reconcile.api_url: "api.stripe.com": want an absolute http or https URL`},
		{"bad type", stripeSource("      api_key: env:STRIPE_RESTRICTED_KEY\n      types: [charge.*, \"[\"]\n"),
			`sources[0].reconcile.types[1]: "[": want an event type or a pattern`},
		{"unknown key", stripeSource("      api_key: env:STRIPE_RESTRICTED_KEY\n      interval: 1h\n"),
			`sources[0].reconcile.interval`},
		{"no reconciler", "sources:\n  - name: hs\n    provider: hubspot\n    secret: env:GITHUB_SECRET\n    reconcile:\n      token: env:GITHUB_RECONCILE_TOKEN\n",
			"sources[0].reconcile: provider hubspot lists nothing hookgate can reconcile from (reconcile is for stripe, github"},
		{"github without hook", githubSource(""),
			"sources[0].reconcile.hook: required for provider github: want repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID"},
		{"github hook malformed", githubSource("      hook: https://github.com/acme/shop/settings/hooks/123\n"),
			`sources[0].reconcile.hook: "https://github.com/acme/shop/settings/hooks/123": want repos/OWNER/REPO/hooks/ID`},
		{"github hook without id", githubSource("      hook: repos/acme/shop/hooks/x\n"),
			`sources[0].reconcile.hook: "repos/acme/shop/hooks/x": want repos/OWNER/REPO/hooks/ID`},
		{"github app hook", githubSource("      hook: app/hook\n"),
			"sources[0].reconcile.hook: app/hook: a GitHub App's hook is read with a JWT"},
		{"github api key", githubSource("      hook: repos/acme/shop/hooks/1\n      api_key: env:GITHUB_RECONCILE_TOKEN\n"),
			"sources[0].reconcile.api_key: not used by provider github: set token"},
		{"shopify without shop", shopifySource("      resources: [orders]\n"),
			"sources[0].reconcile.shop: required for provider shopify"},
		{"shopify unknown resource", shopifySource("      shop: acme.myshopify.com\n      resources: [orders, refunds]\n"),
			`sources[0].reconcile.resources[1]: "refunds": want one of`},
		{"types for shopify", shopifySource("      shop: acme.myshopify.com\n      resources: [orders]\n      types: [orders/*]\n"),
			"sources[0].reconcile.types: not used by provider shopify (it is for stripe, github)"},
		{"github keyed by body", "sources:\n  - name: gh\n    provider: github\n    secret: env:GITHUB_SECRET\n    key: [json:hook_id, header:X-GitHub-Delivery]\n" +
			"    reconcile:\n      token: env:GITHUB_RECONCILE_TOKEN\n      hook: repos/acme/shop/hooks/1\n",
			`sources[0].reconcile: key[0] "json:hook_id" reads more than headers, but provider github lists its deliveries by their headers alone`},
		{"github tenant by path", "sources:\n  - name: gh\n    provider: github\n    secret: env:GITHUB_SECRET\n    tenant: path\n" +
			"    reconcile:\n      token: env:GITHUB_RECONCILE_TOKEN\n      hook: repos/acme/shop/hooks/1\n",
			`sources[0].reconcile: tenant "path" reads more than headers`},
		{"hook for stripe", stripeSource("      api_key: env:STRIPE_RESTRICTED_KEY\n      hook: repos/acme/shop/hooks/1\n"),
			"sources[0].reconcile.hook: not used by provider stripe (it is for github)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse([]byte(c.yaml), "", reconcileEnv)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "rk_live_pasted") {
				t.Errorf("the error repeats the pasted key: %v", err)
			}
		})
	}
}

func TestRateRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"10/s", "600/m", "1000/h"} {
		r, err := ParseRate(s)
		if err != nil || r.String() != s {
			t.Errorf("%s: %v, %v", s, r, err)
		}
	}
}
