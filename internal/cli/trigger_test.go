package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/inbox"
)

// triggerOrg is the Salesforce organization of the test configs, in its
// 15-character form; the gateway keys its events by the 18-character one.
const (
	triggerOrg   = "00D5e000000AbCd"
	triggerOrg18 = "00D5e000000AbCdEAK"
)

// triggerTokens are the URL tokens of the test configs: trigger must
// send them and never print them.
var triggerTokens = []string{"sf-url-token-do-not-print", "shippo-url-token-do-not-print"}

// triggerConfig writes a config with one source per provider, named
// "{provider}-in", and a token-only Shippo source "shippo-token"; each
// secret in a file of its own. secret makes a provider's secret.
func triggerConfig(t *testing.T, listen, db string, secret func(provider string) string) string {
	t.Helper()
	cfg := fmt.Sprintf("listen: %s\ndatabase: %s\nsources:\n", listen, db)
	ref := func(name, value string) string { return "file:" + writeText(t, name, value) }
	for _, p := range []string{"standard", "stripe", "github", "shopify", "hubspot", "shippo"} {
		cfg += fmt.Sprintf("  - name: %s-in\n    provider: %s\n    secret: %s\n", p, p, ref(p+"-secret", secret(p)))
	}
	cfg += fmt.Sprintf("  - name: salesforce-in\n    provider: salesforce\n    organization_id: %s\n    token: %s\n", triggerOrg, ref("sf-token", triggerTokens[0]))
	cfg += fmt.Sprintf("  - name: shippo-token\n    provider: shippo\n    token: %s\n", ref("shippo-token", triggerTokens[1]))
	return writeText(t, "hookgate.yaml", cfg)
}

// triggerSecret is the secret of a provider in the gateway's config.
func triggerSecret(p string) string {
	if p == "standard" {
		return "whsec_c2lnbi10ZXN0LXNlY3JldC0xMjM0NTY3OA=="
	}
	return p + "-signing-secret"
}

// trigger runs `hookgate trigger args...` and returns its stdout.
func trigger(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, stderr bytes.Buffer
	err := cli.Run(t.Context(), append([]string{"trigger"}, args...), nil, &out, &stderr)
	for _, token := range triggerTokens {
		if strings.Contains(out.String(), token) || err != nil && strings.Contains(err.Error(), token) {
			t.Errorf("trigger %v printed the source's token:\n%s%v", args, out.String(), err)
		}
	}
	return out.String(), err
}

// triggerLine is the line trigger prints: what, where, the answer.
var triggerLine = regexp.MustCompile(`^(\S+) (\S+) -> (http://127\.0\.0\.1:\d+/in/[a-z-]+): (\d{3}) (.*)\n$`)

// triggerFixtures are trigger's events, and how many events the gateway
// stores of one request of each (a HubSpot batch holds several).
var triggerFixtures = map[string]map[string]int{
	"standard":   {"contact.created": 1, "invoice.paid": 1},
	"stripe":     {"payment_intent.succeeded": 1, "charge.succeeded": 1, "charge.refunded": 1, "customer.created": 1, "checkout.session.completed": 1},
	"github":     {"push": 1, "pull_request": 1, "ping": 1, "issues": 1},
	"shopify":    {"orders/create": 1, "orders/paid": 1, "customers/create": 1},
	"hubspot":    {"contact.creation": 2, "contact.propertyChange": 1, "deal.propertyChange": 2},
	"salesforce": {"Opportunity": 1, "Lead": 1},
	"shippo":     {"track_updated": 1},
}

// triggerDefaults are the events trigger sends without EVENT.
var triggerDefaults = map[string]string{
	"standard": "contact.created", "stripe": "payment_intent.succeeded", "github": "push",
	"shopify": "orders/create", "hubspot": "contact.creation", "salesforce": "Opportunity", "shippo": "track_updated",
}

// storedKind is the event of a fixture that a stored event came from:
// what the provider names it by, as the preset stores it.
func storedKind(t *testing.T, provider string, e inbox.Event) string {
	t.Helper()
	var body struct{ Type, SubscriptionType string }
	switch provider {
	case "standard", "hubspot":
		if err := json.Unmarshal(e.Payload, &body); err != nil {
			t.Fatalf("%s event %d: %v", provider, e.ID, err)
		}
		return body.Type + body.SubscriptionType
	case "salesforce":
		return e.EntityType
	}
	return e.Type
}

// TestTriggerServe: against a running serve with a source per provider,
// every fixture trigger sends is accepted (202; Salesforce 200 with its
// Ack) and stored, which proves it signed and complete: a request that
// fails its check is answered 401 and stores nothing. Each provider's
// default, triggered twice, is two events, not a duplicate. Shippo is
// triggered signed and with its token alone.
func TestTriggerServe(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	db := "sqlite:" + t.TempDir() + "/hookgate.db"
	config := triggerConfig(t, fmt.Sprintf("127.0.0.1:%d", closedPort(t)), db, triggerSecret)
	serve := startServe(t, "--config", config)

	send := func(provider, source, want string, args ...string) {
		t.Helper()
		out, err := trigger(t, append([]string{provider, "--config", config}, args...)...)
		if err != nil {
			t.Fatalf("trigger %s %v: %v\n%s", provider, args, err, out)
		}
		m := triggerLine.FindStringSubmatch(out)
		wantStatus, wantAnswer := "202", "Accepted "
		if provider == "salesforce" {
			wantStatus, wantAnswer = "200", "OK Ack=true"
		}
		if m == nil || m[1] != provider || m[2] != want || !strings.HasSuffix(m[3], "/in/"+source) ||
			m[4] != wantStatus || !strings.HasPrefix(m[5], wantAnswer) {
			t.Errorf("trigger %s %v printed %q, want one line: %s %s -> …/in/%s: %s %s…", provider, args, out, provider, want, source, wantStatus, wantAnswer)
		}
	}
	want := map[string]map[string]int{}
	for _, p := range slices.Sorted(maps.Keys(triggerFixtures)) {
		want[p+"-in"] = map[string]int{}
		for event, n := range triggerFixtures[p] {
			times := 1
			if event == triggerDefaults[p] {
				// Without EVENT, twice: two events.
				send(p, p+"-in", event)
				send(p, p+"-in", event)
				times = 2
			} else {
				send(p, p+"-in", event, event)
			}
			want[p+"-in"][event] = n * times
		}
	}
	send("shippo", "shippo-token", "track_updated", "--source", "shippo-token")
	want["shippo-token"] = map[string]int{"track_updated": 1}
	// --url: a base gets the source's path, a URL with a path is used as
	// it is.
	send("stripe", "stripe-in", "customer.created", "customer.created", "--url", serve.addr+"/")
	send("stripe", "stripe-in", "customer.created", "customer.created", "--url", serve.addr+"/in/stripe-in")
	want["stripe-in"]["customer.created"] += 2

	store := openDB(t, db)
	for source, kinds := range want {
		events, err := store.List(t.Context(), inbox.Filter{Source: source})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		ids := map[string]bool{}
		for _, e := range events {
			got[storedKind(t, e.Provider, e)]++
			ids[e.EventID] = true
			switch {
			case e.Provider == "salesforce" && e.Tenant != triggerOrg18,
				e.Provider == "shopify" && e.Tenant != "example.myshopify.com",
				e.Provider == "hubspot" && e.Tenant != "62515",
				e.Provider == "github" && e.Headers["X-Github-Hook-Id"] != "498912341":
				t.Errorf("%s: event %d: tenant %q, headers %v", source, e.ID, e.Tenant, e.Headers)
			}
		}
		if !maps.Equal(got, kinds) || len(ids) != len(events) {
			t.Errorf("%s: stored %v (%d event ids for %d events), want %v", source, got, len(ids), len(events), kinds)
		}
	}
}

// TestTriggerRefused: an answer other than 2xx is an error that says
// what it means (exit status 1), after the line with the answer; a
// gateway that is not there is one too. Neither prints a token.
func TestTriggerRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	listen := fmt.Sprintf("127.0.0.1:%d", closedPort(t))
	db := "sqlite:" + t.TempDir() + "/hookgate.db"
	startServe(t, "--config", triggerConfig(t, listen, db, triggerSecret))
	// The sender's config has other secrets than the gateway's.
	other := triggerConfig(t, listen, db, func(p string) string {
		if p == "standard" {
			return "whsec_b3RoZXItc2VjcmV0LW90aGVyLXNlY3JldC0xMjM="
		}
		return p + "-other-secret"
	})
	for _, p := range []string{"standard", "stripe", "github", "shopify", "hubspot", "shippo"} {
		out, err := trigger(t, p, "--config", other)
		if err == nil || cli.ExitCode(err) != 1 || !strings.Contains(err.Error(), "answered 401 Unauthorized: the signature did not verify") ||
			!strings.Contains(out, ": 401 Unauthorized ") {
			t.Errorf("%s with another secret: %v\n%s\nwant exit status 1 and the 401 explained", p, err, out)
		}
	}
	// Salesforce: another organization (its token is right).
	wrongOrg := strings.Replace(readText(t, other), triggerOrg, "00D5e000000ZzZz", 1)
	out, err := trigger(t, "salesforce", "--config", writeText(t, "org.yaml", wrongOrg))
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized: the gateway's source wants another organization id or token") {
		t.Errorf("salesforce of another organization: %v\n%s", err, out)
	}
	store := openDB(t, db)
	if events, err := store.List(t.Context(), inbox.Filter{}); err != nil || len(events) > 0 {
		t.Errorf("refused requests stored %d events (%v)", len(events), err)
	}

	closed := fmt.Sprintf("http://127.0.0.1:%d", closedPort(t))
	out, err = trigger(t, "shippo", "--config", other, "--source", "shippo-token", "--url", closed)
	if err == nil || cli.ExitCode(err) != 1 || !strings.Contains(err.Error(), "trigger: shippo track_updated: POST "+closed+"/in/shippo-token: ") ||
		!strings.Contains(err.Error(), "(is 'hookgate serve' running there?)") || out != "" {
		t.Errorf("trigger to a closed port: %v\n%s", err, out)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTriggerList: --list names every provider's events, its default
// first; with a provider, that provider's alone.
func TestTriggerList(t *testing.T) {
	t.Parallel()
	all, err := trigger(t, "--list")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "trigger/list", all)
	for p, events := range triggerFixtures {
		if !strings.Contains(all, "\n"+pad(p)+triggerDefaults[p]+" (default)") {
			t.Errorf("--list does not name %s's default %s", p, triggerDefaults[p])
		}
		for e := range events {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(pad(p)+e) + ` `).MatchString(all) {
				t.Errorf("--list does not name %s %s", p, e)
			}
		}
	}
	one, err := trigger(t, "github", "--list")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(one), "\n"); len(lines) != 1+len(triggerFixtures["github"]) || strings.Contains(one, "stripe") {
		t.Errorf("--list github:\n%s", one)
	}
}

// pad is a provider as the --list table's first column shows it.
func pad(p string) string { return fmt.Sprintf("%-12s", p) }

func TestTriggerHelp(t *testing.T) {
	t.Parallel()
	golden(t, "trigger/help", runHelp(t, "trigger", "--help"))
}

// TestTriggerMistakes: an unknown provider or event, a source the config
// does not have or a URL trigger cannot use is a usage error (exit
// status 2) that says what to do, and nothing is sent or printed.
func TestTriggerMistakes(t *testing.T) {
	t.Parallel()
	// Nothing listens there: a request would fail with exit status 1.
	config := triggerConfig(t, fmt.Sprintf("127.0.0.1:%d", closedPort(t)), "sqlite:"+t.TempDir()+"/hookgate.db", triggerSecret)
	path := writeText(t, "path.yaml", "sources:\n  - name: std\n    provider: standard\n    tenant: path\n    secret: file:"+writeText(t, "s", triggerSecret("standard"))+"\n")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--config", config}, "trigger: want a provider: standard, stripe, github, shopify, hubspot, salesforce, shippo"},
		{[]string{"paypal", "--config", config}, `trigger: unknown provider "paypal" (want standard, stripe, github, shopify, hubspot, salesforce, shippo)`},
		{[]string{"paypal", "--list"}, `trigger: unknown provider "paypal"`},
		{[]string{"stripe", "invoice.voided", "--config", config}, `trigger: stripe has no event "invoice.voided" (it has payment_intent.succeeded, charge.succeeded, `},
		{[]string{"hmac", "--config", config}, "trigger: hmac has no example events: its events are keyed by the selectors of your config"},
		{[]string{"stripe", "charge.succeeded", "extra", "--config", config}, `trigger: unexpected argument "extra"`},
		{[]string{"stripe"}, "trigger: give --config (or set HOOKGATE_CONFIG)"},
		{[]string{"stripe", "--config", config, "--source", "nope"}, `trigger: the config has no source "nope" (it has standard-in (standard), stripe-in (stripe), `},
		{[]string{"stripe", "--config", config, "--source", "github-in"}, `trigger: source "github-in" is a github source, not stripe`},
		{[]string{"github", "--config", path}, "trigger: the config has no github source (its sources: std (standard))"},
		{[]string{"standard", "--config", path}, `trigger: source "std" takes its tenant from the URL's path; give --tenant`},
		{[]string{"stripe", "--config", config, "--url", "127.0.0.1:8080"}, `trigger: --url "127.0.0.1:8080" is not an absolute http or https URL`},
		{[]string{"stripe", "--config", config, "--nope"}, "trigger: flag provided but not defined: -nope"},
	} {
		out, err := trigger(t, c.args...)
		if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), c.msg) || out != "" {
			t.Errorf("trigger %v: %v (stdout %q), want exit status 2 and %q", c.args, err, out, c.msg)
		}
	}
}
