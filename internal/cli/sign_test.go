package cli_test

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/verify"
)

// sign's headers make a request the provider's verifier accepts.
func TestSignVerifies(t *testing.T) {
	t.Parallel()
	body := `{"id":"evt_1","type":"charge.succeeded"}`
	for _, c := range []struct {
		provider, secret string
		verifier         func() (verify.Verifier, error)
		extra            []string
	}{
		{"hmac", "s3cret", func() (verify.Verifier, error) {
			return verify.NewHMAC("s3cret", verify.HMACConfig{Header: "X-Sig", Algorithm: "sha512", Encoding: "base64", Prefix: "v1="})
		}, []string{"--header", "X-Sig", "--algorithm", "sha512", "--encoding", "base64", "--prefix", "v1="}},
		{"stripe", "whsec_test", func() (verify.Verifier, error) { return verify.NewStripe("whsec_test") }, nil},
		{"standard", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", func() (verify.Verifier, error) {
			return verify.NewStandard("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
		}, nil},
		{"github", "gh-secret", func() (verify.Verifier, error) { return verify.NewGitHub("gh-secret") }, nil},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"sign", "--provider", c.provider, "--secret", c.secret, "-H", "webhook-id: msg_1"}, c.extra...)
		err := cli.Run(t.Context(), args, strings.NewReader(body), &out, &errb)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.provider, err, errb.String())
		}
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/in/demo", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		headers, curl, _ := strings.Cut(out.String(), "\n\n")
		for _, line := range strings.Split(headers, "\n") {
			name, value, _ := strings.Cut(line, ": ")
			req.Header.Set(name, value)
		}
		v, err := c.verifier()
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Verify(req, []byte(body)); err != nil {
			t.Errorf("%s: printed headers do not verify: %v\n%s", c.provider, err, out.String())
		}
		// Without a config, the curl line goes where serve without one
		// listens: the demo source.
		if !strings.HasPrefix(curl, "curl -i -X POST 'http://127.0.0.1:8080/in/demo'") || !strings.Contains(curl, body) {
			t.Errorf("%s: curl line %q", c.provider, curl)
		}
	}
	err := cli.Run(t.Context(), []string{"sign", "--provider", "stripe"}, strings.NewReader(body), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || cli.ExitCode(err) != 1 {
		t.Fatalf("sign without a secret: %v, want a configuration error", err)
	}
}

func TestCheckConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("whsec_do-not-print-me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("sources:\n  - name: stripe\n    provider: stripe\n    secret: file:"+secret+"\n"), 0o600)
	var out bytes.Buffer
	if err := cli.Run(t.Context(), []string{"check-config", "--config", good}, nil, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "valid, 1 source") || !strings.Contains(out.String(), "'****'") ||
		strings.Contains(out.String(), "do-not-print-me") {
		t.Fatalf("check-config output:\n%s", out.String())
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("sources:\n  - name: stripe\n    provider: stripe\n    sekret: file:"+secret+"\n"), 0o600)
	err := cli.Run(t.Context(), []string{"check-config", "--config", bad}, nil, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), "sekret") {
		t.Fatalf("unknown key: %v, want an error naming sekret and line 4", err)
	}
}

// signBodies are a body per provider, each a delivery its preset accepts.
var signBodies = map[string]string{
	"standard": `{"type":"demo.ping","data":{"hello":"world"}}`,
	"stripe": `{"id":"evt_sign_1","object":"event","created":1796300000,"type":"payment_intent.created",` +
		`"data":{"object":{"id":"pi_1","object":"payment_intent","status":"requires_payment_method"}}}`,
	"github":  `{"zen":"Design for failure.","hook_id":1}`,
	"shopify": `{"id":820982911946154508,"email":"jon@example.com"}`,
	"hubspot": `[{"eventId":1,"subscriptionId":2,"portalId":3,"occurredAt":1796300000000,"subscriptionType":"contact.propertyChange",` +
		`"attemptNumber":0,"objectId":123,"propertyName":"lifecyclestage","propertyValue":"lead","changeSource":"CRM"}]`,
	"shippo": `{"event":"track_updated","data":{"carrier":"usps","tracking_number":"9205590164917312751089",` +
		`"tracking_status":{"status":"TRANSIT","status_date":"2026-12-01T13:58:00Z"}}}`,
}

var httpStatus = regexp.MustCompile(`(?m)^HTTP/[0-9.]+ (\d{3})`)

// TestSignCurlReachesServe: for every provider, the curl line sign prints
// from a config's source, run by the shell as pasted, reaches a running
// serve at the source's URL with every header the preset reads: 202, and
// 200 (a duplicate) when run again; each event is stored once. Salesforce
// is answered 200 with its Ack both times, as it requires.
func TestSignCurlReachesServe(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl to run the curl line with")
	}
	salesforce, err := os.ReadFile("../source/testdata/salesforce-outbound.xml")
	if err != nil {
		t.Fatal(err)
	}
	bodies := maps.Clone(signBodies)
	bodies["salesforce"] = string(salesforce)
	db := "sqlite:" + filepath.Join(t.TempDir(), "hookgate.db")
	cfg := fmt.Sprintf("listen: 127.0.0.1:%d\ndatabase: %s\nsources:\n", closedPort(t), db)
	for _, p := range slices.Sorted(maps.Keys(bodies)) {
		cfg += fmt.Sprintf("  - name: %s-in\n    provider: %s\n", p, p)
		secret := func(field, value string) {
			file := writeText(t, p+"-"+field, value)
			cfg += fmt.Sprintf("    %s: file:%s\n", field, file)
		}
		switch p {
		case "standard":
			secret("secret", "whsec_c2lnbi10ZXN0LXNlY3JldC0xMjM0NTY3OA==")
		case "salesforce":
			cfg += "    organization_id: 00D5e000000AbCdEAK\n"
			secret("token", "sf-url-token")
		case "shippo":
			secret("token", "shippo-url-token")
		default:
			secret("secret", p+"-signing-secret")
		}
	}
	path := writeText(t, "hookgate.yaml", cfg)
	startServe(t, "--config", path)
	for _, p := range slices.Sorted(maps.Keys(bodies)) {
		var out, stderr bytes.Buffer
		if err := cli.Run(t.Context(), []string{"sign", "--config", path, "--source", p + "-in"}, strings.NewReader(bodies[p]), &out, &stderr); err != nil {
			t.Fatalf("%s: sign: %v\n%s", p, err, stderr.String())
		}
		_, curl, _ := strings.Cut(out.String(), "\n\n")
		answers := []string{"202", "200"}
		if p == "salesforce" {
			answers = []string{"200", "200"}
		}
		for i, want := range answers {
			resp, err := exec.Command("sh", "-c", curl).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: sh -c %s: %v\n%s", p, curl, err, resp)
			}
			m := httpStatus.FindSubmatch(resp)
			if m == nil || string(m[1]) != want || p == "salesforce" && !bytes.Contains(resp, []byte("<Ack>true</Ack>")) {
				t.Errorf("%s: run %d of sign's curl line answered\n%s\nwant %s\n(curl line: %s)", p, i+1, resp, want, curl)
			}
		}
	}
	store := openDB(t, db)
	for p := range bodies {
		events, err := store.List(t.Context(), inbox.Filter{Source: p + "-in"})
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if p == "salesforce" {
			want = 2 // the body holds two notifications
		}
		if len(events) != want {
			t.Errorf("%s: %d events stored, want %d", p, len(events), want)
			continue
		}
		// What the preset reads from the headers sign adds besides the id.
		e := events[0]
		switch {
		case p == "github" && e.Type != "ping",
			p == "shopify" && (e.Type != "orders/create" || e.Tenant != "example.myshopify.com" || e.EntityType != "orders" || e.EntityVersion == ""):
			t.Errorf("%s: stored type %q, tenant %q, entity %q version %q: headers missing", p, e.Type, e.Tenant, e.EntityType, e.EntityVersion)
		}
	}
}

// TestSignConfigMistakes: a source sign cannot tell, or flags that would
// disagree with the config's source, are usage errors saying what to do.
func TestSignConfigMistakes(t *testing.T) {
	t.Parallel()
	secret := writeText(t, "secret", "gh-secret")
	two := writeText(t, "two.yaml", fmt.Sprintf("sources:\n  - name: gh\n    provider: github\n    secret: file:%s\n  - name: gh2\n    provider: github\n    secret: file:%s\n", secret, secret))
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--config", two}, "sign: the config has 2 sources (gh, gh2): name one with --source"},
		{[]string{"--config", two, "--source", "stripe"}, `sign: the config has no source "stripe" (it has gh, gh2)`},
		{[]string{"--config", two, "--source", "gh", "--secret", "other"}, "sign: --config takes the provider and its secrets from the source"},
		{[]string{"--source", "gh"}, "sign: --source names a source of --config; give --config"},
		{[]string{"--secret", "s"}, "sign: --provider is required without --config"},
	} {
		var out bytes.Buffer
		err := cli.Run(t.Context(), append([]string{"sign"}, c.args...), strings.NewReader("{}"), &out, &bytes.Buffer{})
		if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), c.msg) || out.Len() > 0 {
			t.Errorf("sign %v: %v (stdout %q), want exit status 2 and %q", c.args, err, out.String(), c.msg)
		}
	}
}

func TestSignHelp(t *testing.T) {
	t.Parallel()
	golden(t, "help-sign", runHelp(t, "sign", "--help"))
}

// TestSignURL: the curl line goes to the config's listen address (on
// loopback for every interface), the source's path and a path tenant.
func TestSignURL(t *testing.T) {
	t.Parallel()
	secret := writeText(t, "secret", "whsec_c2lnbi10ZXN0LXNlY3JldC0xMjM0NTY3OA==")
	cfg := writeText(t, "hookgate.yaml", fmt.Sprintf("listen: 0.0.0.0:9999\nsources:\n  - name: std\n    provider: standard\n    tenant: path\n    secret: file:%s\n", secret))
	var out bytes.Buffer
	if err := cli.Run(t.Context(), []string{"sign", "--config", cfg, "--tenant", "acme"}, strings.NewReader("{}"), &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if _, curl, _ := strings.Cut(out.String(), "\n\n"); !strings.HasPrefix(curl, "curl -i -X POST 'http://127.0.0.1:9999/in/std/acme' ") {
		t.Errorf("curl line %q, want it to post to http://127.0.0.1:9999/in/std/acme", curl)
	}
}
