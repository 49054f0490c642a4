package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testEnv is the environment the golden configurations read their secrets from.
var testEnv = map[string]string{
	"STRIPE_WEBHOOK_SECRET": "whsec_stripe_value",
	"HUBSPOT_CLIENT_SECRET": "hubspot_value",
	"SF_TOKEN":              "sf_token_value",
	"SHIPPO_TOKEN":          "shippo_token_value",
	"SHOPIFY_SECRET":        "shopify_value",
	"GITHUB_SECRET":         "github_value",
	"STANDARD_SECRET":       "whsec_standard_value",
	"CUSTOM_SECRET":         "custom_value",
	"HOOKGATE_ADMIN_TOKEN":  "admin_token_value_0123456789abcdef",
	"SINK_TOKEN":            "Bearer sink_token_value",
	"MULTILINE_TOKEN":       "multiline_token_value\r\nX-Evil: 1",
	"APP_WEBHOOK_SECRET":    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	"BAD_WEBHOOK_SECRET":    "whsec_not*base64*value",
	"OPS_WEBHOOK_SECRET":    "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
	"SLACK_WEBHOOK_URL":     "https://hooks.slack.com/services/T000/B000/slack_secret_part",
	"SMTP_PASSWORD":         "smtp_password_value",
}

func lookupTestEnv(name string) (string, bool) {
	v, ok := testEnv[name]
	return v, ok
}

func TestParseGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/good/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := parse(data, filepath.Dir(in), lookupTestEnv)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			got, err := cfg.Redacted()
			if err != nil {
				t.Fatalf("Redacted: %v", err)
			}
			for _, v := range testEnv {
				if bytes.Contains(got, []byte(v)) {
					t.Errorf("Redacted output contains secret %q", v)
				}
			}
			// Literal header values are masked like secrets (full.yaml).
			if bytes.Contains(got, []byte("main_ledger_book")) {
				t.Errorf("Redacted output contains a literal header value")
			}
			golden := strings.TrimSuffix(in, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Redacted() =\n%s\nwant (%s)\n%s", got, golden, want)
			}
		})
	}
}

// URL passwords (the database's, the Redis front's) never reach
// check-config's output.
func TestRedactedURLPasswords(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte("database: postgres://hookgate:pg-pass-1@db.internal/hookgate\ndatabase_session: postgres://hookgate:pg-pass-3@db-direct.internal/hookgate\ndedupe:\n  front: redis://:redis-pass-2@cache:6379/0\n"), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cfg.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"pg-pass-1", "redis-pass-2", "pg-pass-3"} {
		if bytes.Contains(out, []byte(secret)) {
			t.Errorf("check-config output holds the password %q:\n%s", secret, out)
		}
	}
	for _, kept := range []string{"postgres://hookgate:xxxxx@db.internal/hookgate", "redis://:xxxxx@cache:6379/0",
		"database_session: postgres://hookgate:xxxxx@db-direct.internal/hookgate"} {
		if !bytes.Contains(out, []byte(kept)) {
			t.Errorf("check-config output lacks %q:\n%s", kept, out)
		}
	}
	if cfg.Database != "postgres://hookgate:pg-pass-1@db.internal/hookgate" {
		t.Errorf("Redacted changed the configuration: %q", cfg.Database)
	}
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte("sources:\n  - {name: a, provider: stripe, secret: env:STRIPE_WEBHOOK_SECRET}\n"), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:8080" || cfg.Database != "sqlite:hookgate.db" || cfg.MaxBody != 1<<20 {
		t.Errorf("listen/database/max_body defaults = %q %q %d", cfg.Listen, cfg.Database, cfg.MaxBody)
	}
	if cfg.Dedupe.Window != Duration(168*time.Hour) || cfg.Dedupe.OnStoreError != "reject" || cfg.Dedupe.StoreTimeout != Duration(5*time.Second) {
		t.Errorf("dedupe defaults = %+v", cfg.Dedupe)
	}
	if cfg.Sources[0].Window != cfg.Dedupe.Window {
		t.Errorf("source window = %v, want dedupe.window %v", cfg.Sources[0].Window, cfg.Dedupe.Window)
	}
	if got := cfg.Sources[0].Secret.Value(); got != "whsec_stripe_value" {
		t.Errorf("secret = %q", got)
	}
	if got := cfg.Sources[0].Secret.Ref(); got != "env:STRIPE_WEBHOOK_SECRET" {
		t.Errorf("secret ref = %q", got)
	}

	for _, data := range []string{"", "# nothing\n", "---\n"} {
		cfg, err := parse([]byte(data), "", lookupTestEnv)
		if err != nil {
			t.Errorf("parse(%q): %v", data, err)
			continue
		}
		if cfg.Listen != DefaultListen || cfg.MaxBody != DefaultMaxBody || cfg.Dedupe.Window != DefaultWindow {
			t.Errorf("parse(%q) = %+v, want the defaults", data, cfg)
		}
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("Default().Validate() = %v", err)
	}
}

func TestSourceWindowKept(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte(`
dedupe: {window: 48h}
sources:
  - {name: a, provider: github, secret: env:GITHUB_SECRET, window: 2h}
  - {name: b, provider: github, secret: env:GITHUB_SECRET}
`), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Sources[0].Window != Duration(2*time.Hour) || cfg.Sources[1].Window != Duration(48*time.Hour) {
		t.Errorf("windows = %v, %v; want 2h, 48h", cfg.Sources[0].Window, cfg.Sources[1].Window)
	}
}

// TestParseErrors has one case per kind of invalid configuration. Each names
// the text the error must contain (the field path or key, the value, the
// line) and the sentinel it must match.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "absent")
	src := func(fields string) string {
		return "sources:\n  - name: s\n" + fields
	}
	dest := func(fields string) string {
		return src("    provider: github\n    secret: env:GITHUB_SECRET\n    destinations:\n      - name: app\n" + fields)
	}
	const destURL = "        url: http://127.0.0.1:3000/in\n"
	tests := []struct {
		name string
		yaml string
		want []string
		is   error
	}{
		{"unknown top-level key", "listen: :80\nlisten_addr: :81\n",
			[]string{"line 2: listen_addr: unknown field; did you mean listen?"}, ErrInvalid},
		{"misspelt top-level key", "workerz: 8\n",
			[]string{"line 1: workerz: unknown field; did you mean workers?"}, ErrInvalid},
		{"unknown source key", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    sekret: x\n"),
			[]string{"line 5: sources[0].sekret: unknown field; did you mean secret?"}, ErrInvalid},
		{"destination key on a source", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    retries: 3\n"),
			[]string{"line 5: sources[0].retries: unknown field; want one of: name, provider, secret, token, tenant, public_url, " +
				"organization_id, signature, key, scope, window, replay_guard, entity, schema, expect_every, destinations"}, ErrInvalid},
		{"unknown entity key", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    entity: {kind: json:a}\n"),
			[]string{"line 5: sources[0].entity.kind: unknown field; want one of: type, id, version, state"}, ErrInvalid},
		{"unknown signature key", src("    provider: hmac\n    secret: env:CUSTOM_SECRET\n    key: [header:X-Id]\n    signature: {header: X-Sig, algo: sha1}\n"),
			[]string{"line 6: sources[0].signature.algo: unknown field; did you mean algorithm?"}, ErrInvalid},
		{"key written twice", "listen: :80\nworkers: 2\nlisten: :81\n",
			[]string{"line 3: listen: written twice (first on line 1): keep one"}, ErrInvalid},
		{"whole file a list", "- listen: :80\n",
			[]string{"line 1: want a mapping, not a list"}, ErrInvalid},
		{"whole file a word", "hookgate\n",
			[]string{"line 1: \"hookgate\": want a mapping"}, ErrInvalid},
		{"workers a word", "workers: four\n",
			[]string{"line 1: workers: \"four\": want a whole number"}, ErrInvalid},
		{"workers a fraction", "workers: 1.5\n",
			[]string{"line 1: workers: \"1.5\": want a whole number"}, ErrInvalid},
		{"workers quoted", "workers: \"4\"\n",
			[]string{"line 1: workers: \"4\": want a whole number, written without quotes"}, ErrInvalid},
		{"workers too large", "workers: 99999999999999999999\n",
			[]string{"line 1: workers: \"99999999999999999999\": want a whole number"}, ErrInvalid},
		{"batch a list", "batch: [1]\n",
			[]string{"line 1: batch: want a whole number, not a list"}, ErrInvalid},
		{"public not a boolean", "metrics:\n  public: maybe\n",
			[]string{"line 2: metrics.public: \"maybe\": want true or false"}, ErrInvalid},
		{"public a mapping", "metrics:\n  public: {a: 1}\n",
			[]string{"line 2: metrics.public: want true or false, not a mapping"}, ErrInvalid},
		{"listen a list", "listen: [a]\n",
			[]string{"line 1: listen: want text, not a list"}, ErrInvalid},
		{"admin a word", "admin: on\n",
			[]string{"line 1: admin: \"on\": want a mapping"}, ErrInvalid},
		{"sources a mapping", "sources:\n  name: a\n",
			[]string{"line 2: sources: want a list, not a mapping"}, ErrInvalid},
		{"source a word", "sources: [stripe]\n",
			[]string{"line 1: sources[0]: \"stripe\": want a mapping"}, ErrInvalid},
		{"key not a list", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    key: json:id\n"),
			[]string{"line 5: sources[0].key: \"json:id\": want a list"}, ErrInvalid},
		{"key element a mapping", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    key: [{json: id}]\n"),
			[]string{"line 5: sources[0].key[0]: want text, not a mapping"}, ErrInvalid},
		{"signature a word", src("    provider: hmac\n    secret: env:CUSTOM_SECRET\n    key: [header:X-Id]\n    signature: X-Sig\n"),
			[]string{"line 6: sources[0].signature: \"X-Sig\": want a mapping"}, ErrInvalid},
		{"secret a mapping", src("    provider: stripe\n    secret: {env: STRIPE_WEBHOOK_SECRET}\n"),
			[]string{"line 4: sources[0].secret: want env:NAME or file:PATH, or a list of them (the value is not shown)"}, ErrInvalid},
		{"secret list with an inline secret", src("    provider: stripe\n    secret: [env:STRIPE_WEBHOOK_SECRET, inline_secret_value]\n"),
			[]string{"line 4: sources[0].secret[1]: want env:NAME or file:PATH (the value is not shown)"}, ErrInvalid},
		{"empty secret list", src("    provider: stripe\n    secret: []\n"),
			[]string{"line 4: sources[0].secret: want at least one env:NAME or file:PATH"}, ErrInvalid},
		{"errors in document order", "workers: x\nbatch: y\nlistn: z\n",
			[]string{"line 1: workers: \"x\": want a whole number\nline 2: batch: \"y\": want a whole number\nline 3: listn: unknown field; did you mean listen?"}, ErrInvalid},
		{"bad provider", src("    provider: strpe\n    secret: env:STRIPE_WEBHOOK_SECRET\n"),
			[]string{"line 3: sources[0].provider: unknown provider \"strpe\" (want standard|stripe|github|shopify|hubspot|salesforce|shippo|hmac)"}, ErrInvalid},
		{"missing provider", src(""),
			[]string{"sources[0].provider: unknown provider \"\""}, ErrInvalid},
		{"secret env unset", src("    provider: stripe\n    secret: env:HOOKGATE_TEST_UNSET\n"),
			[]string{"line 4: sources[0].secret", "env:HOOKGATE_TEST_UNSET is unset or empty"}, ErrSecret},
		{"secret file missing", src("    provider: stripe\n    secret: file:" + missing + "\n"),
			[]string{"sources[0].secret", "file:" + missing, "no such file"}, ErrSecret},
		{"secret written inline", src("    provider: stripe\n    secret: whsec_inline_secret_value\n"),
			[]string{"line 4: sources[0].secret: want env:NAME or file:PATH (the value is not shown)"}, ErrInvalid},
		{"secret missing", src("    provider: github\n"),
			[]string{"sources[0].secret: required for provider github"}, ErrInvalid},
		{"secret on salesforce", src("    provider: salesforce\n    organization_id: 00D5e000000AbCdEAK\n    secret: env:GITHUB_SECRET\n"),
			[]string{"sources[0].secret: not used by provider salesforce"}, ErrInvalid},
		{"shippo without secret or token", src("    provider: shippo\n"),
			[]string{"sources[0].secret: provider shippo needs a secret, a token or both"}, ErrInvalid},
		{"token on stripe", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    token: env:SF_TOKEN\n"),
			[]string{"sources[0].token: only for providers salesforce and shippo"}, ErrInvalid},
		{"salesforce without organization", src("    provider: salesforce\n"),
			[]string{"sources[0].organization_id: required for provider salesforce"}, ErrInvalid},
		{"salesforce bad organization", src("    provider: salesforce\n    organization_id: 12345\n"),
			[]string{"sources[0].organization_id: \"12345\""}, ErrInvalid},
		{"organization on stripe", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    organization_id: 00D5e000000AbCdEAK\n"),
			[]string{"sources[0].organization_id: only for provider salesforce"}, ErrInvalid},
		{"hmac without signature", src("    provider: hmac\n    secret: env:CUSTOM_SECRET\n    key: [header:X-Id]\n"),
			[]string{"sources[0].signature: required for provider hmac"}, ErrInvalid},
		{"limits", "max_body: 2MiB\nlimits: {max_connections: 0, max_pending_body: 1MiB}\n",
			[]string{"limits.max_connections: 0: want at least 1", "limits.max_pending_body: 1MiB: want at least max_body (2MiB)"}, ErrInvalid},
		{"bad replay guard", src("    provider: github\n    secret: env:GITHUB_SECRET\n    replay_guard: maybe\n"),
			[]string{"line 5: sources[0].replay_guard: \"maybe\": want on or off"}, ErrInvalid},
		{"hmac without key", src("    provider: hmac\n    secret: env:CUSTOM_SECRET\n    signature: {header: X-Sig}\n"),
			[]string{"sources[0].key: required for provider hmac"}, ErrInvalid},
		{"hmac bad algorithm", src("    provider: hmac\n    secret: env:CUSTOM_SECRET\n    key: [header:X-Id]\n    signature: {header: X-Sig, algorithm: md5, encoding: b32}\n"),
			[]string{"sources[0].signature.algorithm: \"md5\"", "sources[0].signature.encoding: \"b32\""}, ErrInvalid},
		{"hmac bad header", src("    provider: hmac\n    secret: env:CUSTOM_SECRET\n    key: [header:X-Id]\n    signature: {header: \"X Sig\"}\n"),
			[]string{"sources[0].signature.header: \"X Sig\""}, ErrInvalid},
		{"signature on github", src("    provider: github\n    secret: env:GITHUB_SECRET\n    signature: {header: X-Sig}\n"),
			[]string{"sources[0].signature: only for provider hmac"}, ErrInvalid},
		{"bad selector kind", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    key: [body:id]\n"),
			[]string{"line 5: sources[0].key[0]: bad selector \"body:id\": unknown kind \"body\""}, ErrSelector},
		{"selector without colon", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    tenant: account\n"),
			[]string{"sources[0].tenant: bad selector \"account\""}, ErrSelector},
		{"path outside tenant", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    scope: [path]\n"),
			[]string{"sources[0].scope[0]: bad selector \"path\": path is only valid as the tenant"}, ErrSelector},
		{"empty const key", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    key: [\"const:\"]\n"),
			[]string{"sources[0].key[0]: bad selector \"const:\": needs a value"}, ErrSelector},
		{"bad json path", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    entity: {id: json:data..id}\n"),
			[]string{"sources[0].entity.id: bad selector \"json:data..id\""}, ErrSelector},
		{"json on salesforce", src("    provider: salesforce\n    organization_id: 00D5e000000AbCdEAK\n    key: [json:id]\n"),
			[]string{"sources[0].key[0]", "salesforce bodies are XML"}, ErrSelector},
		{"xml on stripe", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    key: [xml:Id]\n"),
			[]string{"sources[0].key[0]", "xml selectors need provider salesforce"}, ErrSelector},
		{"too many scope selectors", src("    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n    scope: [const:a, const:b, const:c]\n"),
			[]string{"sources[0].scope: 3 selectors"}, ErrInvalid},
		{"bad public url", src("    provider: hubspot\n    secret: env:HUBSPOT_CLIENT_SECRET\n    public_url: /in/crm\n"),
			[]string{"sources[0].public_url: \"/in/crm\""}, ErrInvalid},
		{"bad source name", "sources:\n  - name: Stripe Live\n    provider: stripe\n    secret: env:STRIPE_WEBHOOK_SECRET\n",
			[]string{"line 2: sources[0].name: \"Stripe Live\""}, ErrInvalid},
		{"duplicate source name", "sources:\n  - {name: a, provider: github, secret: env:GITHUB_SECRET}\n  - {name: a, provider: github, secret: env:GITHUB_SECRET}\n",
			[]string{"line 3: sources[1].name: \"a\": already used by sources[0]"}, ErrInvalid},
		{"bad size unit", "max_body: 1XB\n",
			[]string{"line 1: max_body: \"1XB\": want a whole number of bytes with a unit of B, KiB, MiB, GiB, KB, MB or GB, such as 1MiB"}, ErrInvalid},
		{"fractional size", "max_body: 1.5MiB\n",
			[]string{"line 1: max_body: \"1.5MiB\": want a whole number of bytes"}, ErrInvalid},
		{"negative size", "max_body: -1\n",
			[]string{"max_body: \"-1\": want a whole number of bytes"}, ErrInvalid},
		{"size overflow", "max_body: 99999999999GiB\n",
			[]string{"max_body: \"99999999999GiB\": want a whole number of bytes"}, ErrInvalid},
		{"size a mapping", "limits:\n  max_pending_body: {a: 1}\n",
			[]string{"line 2: limits.max_pending_body: want a whole number of bytes with a unit of B, KiB, MiB, GiB, KB, MB or GB, such as 1MiB, not a mapping"}, ErrInvalid},
		{"bad duration", "dedupe:\n  window: 7x\n",
			[]string{"line 2: dedupe.window: \"7x\": want a duration like 30s, 5m, 2h or 7d"}, ErrInvalid},
		{"fractional days", "dedupe:\n  window: 1.5d\n",
			[]string{"line 2: dedupe.window: \"1.5d\": want a duration like 30s, 5m, 2h or 7d"}, ErrInvalid},
		{"duration a list", "retention: [1h]\n",
			[]string{"line 1: retention: want a duration like 30s, 5m, 2h or 7d, not a list"}, ErrInvalid},
		{"negative days", "dedupe:\n  window: -7d\n",
			[]string{"line 2: dedupe.window: -7d: must be positive"}, ErrInvalid},
		{"negative window", "dedupe:\n  window: -1h\n",
			[]string{"line 2: dedupe.window: -1h: must be positive"}, ErrInvalid},
		{"negative source window", src("    provider: github\n    secret: env:GITHUB_SECRET\n    window: -5m\n"),
			[]string{"sources[0].window: -5m: must not be negative"}, ErrInvalid},
		{"zero store_timeout", "dedupe:\n  store_timeout: 0s\n",
			[]string{"line 2: dedupe.store_timeout: 0s: must be positive"}, ErrInvalid},
		{"negative store_timeout", "dedupe:\n  store_timeout: -1s\n",
			[]string{"line 2: dedupe.store_timeout: -1s: must be positive"}, ErrInvalid},
		{"bad on_store_error", "dedupe:\n  on_store_error: retry\n",
			[]string{"dedupe.on_store_error: \"retry\": want reject or spool"}, ErrInvalid},
		{"spool without a file", "dedupe:\n  on_store_error: spool\n",
			[]string{"dedupe.spool: required with on_store_error: spool"}, ErrInvalid},
		{"front not redis", "dedupe:\n  front: http://127.0.0.1:6379\n",
			[]string{"dedupe.front: want a Redis URL"}, ErrInvalid},
		{"front prefix with a brace", "dedupe:\n  front_prefix: \"a{b\"\n",
			[]string{"dedupe.front_prefix: \"a{b\": may not contain"}, ErrInvalid},
		{"bad postgres URL", "database: \"postgres://u:s3cret@host:port/x\"\n",
			[]string{"line 1: database: not a valid PostgreSQL URL: invalid port"}, ErrInvalid},
		{"unknown database", "database: mysql://localhost\n",
			[]string{"database: \"mysql://localhost\": want sqlite:PATH or postgres://…"}, ErrInvalid},
		{"database_session beside SQLite", "database_session: postgres://u@db/x\n",
			[]string{"line 1: database_session: set, but database is not PostgreSQL"}, ErrInvalid},
		{"database_session not PostgreSQL", "database: postgres://u@pooler/x\ndatabase_session: mysql://u@db/x\n",
			[]string{"line 2: database_session: want a postgres:// URL"}, ErrInvalid},
		{"bad database_session URL", "database: postgres://u@pooler/x\ndatabase_session: \"postgres://u:s3cret@db:port/x\"\n",
			[]string{"line 2: database_session: not a valid PostgreSQL URL: invalid port"}, ErrInvalid},
		{"zero workers", "workers: 0\n",
			[]string{"line 1: workers: 0: want at least 1"}, ErrInvalid},
		{"zero batch", "batch: 0\n",
			[]string{"line 1: batch: 0: want 1 to 1000"}, ErrInvalid},
		{"batch too large", "batch: 1001\n",
			[]string{"line 1: batch: 1001: want 1 to 1000"}, ErrInvalid},
		{"zero retention", "retention: 0s\n",
			[]string{"line 1: retention: 0s: must be positive"}, ErrInvalid},
		{"negative sweep_every", "sweep_every: -1m\n",
			[]string{"line 1: sweep_every: -1m: must be positive"}, ErrInvalid},
		{"zero lease", "lease: 0s\n",
			[]string{"line 1: lease: 0s: want at least 1s"}, ErrInvalid},
		{"lease below 1s", "lease: 900ms\n",
			[]string{"line 1: lease: 900ms: want at least 1s"}, ErrInvalid},
		{"lease shorter than default timeout", "lease: 5s\n" + dest(destURL),
			[]string{"line 1: lease: 5s is shorter than sources[0].destinations[0].timeout (10s) + 1s: raise lease to at least 11s or lower that timeout"}, ErrInvalid},
		{"lease shorter than second destination's timeout", "lease: 10s\n" + dest(destURL+"        timeout: 9s\n      - name: slow\n"+destURL+"        timeout: 30s\n"),
			[]string{"line 1: lease: 10s is shorter than sources[0].destinations[1].timeout (30s) + 1s: raise lease to at least 31s or lower that timeout"}, ErrInvalid},
		{"lease equal to timeout", "lease: 10s\n" + dest(destURL+"        timeout: 10s\n"),
			[]string{"lease: 10s is shorter than sources[0].destinations[0].timeout (10s) + 1s: raise lease to at least 11s"}, ErrInvalid},
		{"long timeout under the default lease", dest(destURL + "        timeout: 2m\n"),
			[]string{"lease: 1m is shorter than sources[0].destinations[0].timeout (2m) + 1s: raise lease to at least 2m1s"}, ErrInvalid},
		{"unknown admin key", "admin:\n  password: env:HOOKGATE_ADMIN_TOKEN\n",
			[]string{"line 2: admin.password: unknown field; want one of: token, listen"}, ErrInvalid},
		{"admin token unset", "admin:\n  token: env:HOOKGATE_TEST_UNSET\n",
			[]string{"line 2: admin.token", "env:HOOKGATE_TEST_UNSET is unset or empty"}, ErrSecret},
		{"admin listen not host:port", "admin:\n  listen: \"9090\"\n",
			[]string{"line 2: admin.listen: \"9090\": want host:port"}, ErrInvalid},
		{"admin listen bad port", "admin:\n  listen: 127.0.0.1:99999\n",
			[]string{"line 2: admin.listen: \"127.0.0.1:99999\": want a port number 0-65535"}, ErrInvalid},
		{"admin listen same as listen", "listen: 127.0.0.1:8080\nadmin:\n  listen: 127.0.0.1:8080\n",
			[]string{"line 3: admin.listen: \"127.0.0.1:8080\": the same address as listen"}, ErrInvalid},
		{"admin listen on the port listen takes everywhere", "listen: :8080\nadmin:\n  listen: 127.0.0.1:8080\n",
			[]string{"line 3: admin.listen: \"127.0.0.1:8080\": the same address as listen"}, ErrInvalid},
		{"unknown metrics key", "metrics:\n  path: /m\n",
			[]string{"line 2: metrics.path: unknown field; want one of: token, public"}, ErrInvalid},
		{"metrics token unset", "metrics:\n  token: env:HOOKGATE_TEST_UNSET\n",
			[]string{"line 2: metrics.token", "env:HOOKGATE_TEST_UNSET is unset or empty"}, ErrSecret},
		{"metrics token inline", "metrics:\n  token: inline_secret_value\n",
			[]string{"line 2: metrics.token: want env:NAME or file:PATH (the value is not shown)"}, ErrInvalid},
		{"admin token inline", "admin:\n  token: inline_secret_value\n",
			[]string{"line 2: admin.token: want env:NAME or file:PATH (the value is not shown)"}, ErrInvalid},
		{"schema missing", src("    provider: github\n    secret: env:GITHUB_SECRET\n    schema: " + missing + ".json\n"),
			[]string{"line 5: sources[0].schema: \"" + missing + ".json\"", "no such file"}, ErrInvalid},
		{"schema relative missing", src("    provider: github\n    secret: env:GITHUB_SECRET\n    schema: schemas/absent.json\n"),
			[]string{"sources[0].schema: \"schemas/absent.json\"", "no such file"}, ErrInvalid},
		{"schema a directory", src("    provider: github\n    secret: env:GITHUB_SECRET\n    schema: testdata\n"),
			[]string{"sources[0].schema: \"testdata\": not a regular file"}, ErrInvalid},
		{"unknown destination key", dest(destURL + "        retries: 3\n"),
			[]string{"line 8: sources[0].destinations[0].retries: unknown field; want one of: name, url, subject, exchange, routing_key, topic, password, secret, on, types, headers, " +
				"timeout, max_attempts, retry_initial, retry_max_delay, max_in_flight, pause_after, pause_for"}, ErrInvalid},
		{"destination key in another case", dest(destURL + "        maxAttempts: 3\n"),
			[]string{"line 8: sources[0].destinations[0].maxAttempts: unknown field; did you mean max_attempts?"}, ErrInvalid},
		{"destination key that starts two", dest(destURL + "        retry: 1s\n"),
			[]string{"line 8: sources[0].destinations[0].retry: unknown field; did you mean retry_initial or retry_max_delay?"}, ErrInvalid},
		{"unknown key in the second destination", dest(destURL + "      - name: b\n" + destURL + "        timout: 5s\n"),
			[]string{"line 10: sources[0].destinations[1].timout: unknown field; did you mean timeout?"}, ErrInvalid},
		{"unknown key beside a merge", "sources:\n  - name: s\n    provider: github\n    secret: env:GITHUB_SECRET\n    destinations:\n" +
			"      - &app {name: a, url: \"http://127.0.0.1:3000/in\"}\n      - {<<: *app, name: b, timeot: 3s}\n",
			[]string{"line 7: sources[0].destinations[1].timeot: unknown field; did you mean timeout?"}, ErrInvalid},
		{"unknown key in a merged mapping", "sources:\n  - name: s\n    provider: github\n    secret: env:GITHUB_SECRET\n    destinations:\n" +
			"      - &app {name: a, url: \"http://127.0.0.1:3000/in\", timeot: 3s}\n      - {<<: *app, name: b}\n",
			[]string{"line 6: sources[0].destinations[0].timeot: unknown field; did you mean timeout?"}, ErrInvalid},
		{"destination max_attempts a word", dest(destURL + "        max_attempts: many\n"),
			[]string{"line 8: sources[0].destinations[0].max_attempts: \"many\": want a whole number"}, ErrInvalid},
		{"destination a word", src("    provider: github\n    secret: env:GITHUB_SECRET\n    destinations: [app]\n"),
			[]string{"line 5: sources[0].destinations[0]: \"app\": want a mapping"}, ErrInvalid},
		{"destination header written twice", dest(destURL + "        headers:\n          X-A: a\n          X-A: b\n"),
			[]string{"line 10: sources[0].destinations[0].headers.X-A: written twice (first on line 9): keep one"}, ErrInvalid},
		{"destination without url", dest(""),
			[]string{"line 6: sources[0].destinations[0].url: missing: want an absolute http or https URL"}, ErrInvalid},
		{"destination relative url", dest("        url: /hooks/stripe\n"),
			[]string{"line 7: sources[0].destinations[0].url: no scheme: want an absolute http or https URL"}, ErrInvalid},
		{"destination ftp url", dest("        url: ftp://example.com/in\n"),
			[]string{"sources[0].destinations[0].url: scheme \"ftp\": want"}, ErrInvalid},
		{"destination bad name", src("    provider: github\n    secret: env:GITHUB_SECRET\n    destinations:\n      - name: My App\n" + destURL),
			[]string{"line 6: sources[0].destinations[0].name: \"My App\""}, ErrInvalid},
		{"destination duplicate name", dest(destURL + "      - name: app\n" + destURL),
			[]string{"line 8: sources[0].destinations[1].name: \"app\": already used by destinations[0]"}, ErrInvalid},
		{"destination bad on", dest(destURL + "        on: change\n"),
			[]string{"line 8: sources[0].destinations[0].on: \"change\": want event, transition or all"}, ErrInvalid},
		{"destination empty on", dest(destURL + "        on: \"\"\n"),
			[]string{"sources[0].destinations[0].on: \"\": want event, transition or all"}, ErrInvalid},
		{"destination zero timeout", dest(destURL + "        timeout: 0s\n"),
			[]string{"line 8: sources[0].destinations[0].timeout: 0s: must be positive"}, ErrInvalid},
		{"destination negative timeout", dest(destURL + "        timeout: -5s\n"),
			[]string{"sources[0].destinations[0].timeout: -5s: must be positive"}, ErrInvalid},
		{"destination zero max_attempts", dest(destURL + "        max_attempts: 0\n"),
			[]string{"line 8: sources[0].destinations[0].max_attempts: 0: want at least 1"}, ErrInvalid},
		{"destination negative max_attempts", dest(destURL + "        max_attempts: -3\n"),
			[]string{"line 8: sources[0].destinations[0].max_attempts: -3: want at least 1"}, ErrInvalid},
		{"destination zero retry_initial", dest(destURL + "        retry_initial: 0s\n"),
			[]string{"line 8: sources[0].destinations[0].retry_initial: 0s: must be positive"}, ErrInvalid},
		{"destination negative retry_initial", dest(destURL + "        retry_initial: -1s\n"),
			[]string{"sources[0].destinations[0].retry_initial: -1s: must be positive"}, ErrInvalid},
		{"destination zero retry_max_delay", dest(destURL + "        retry_max_delay: 0s\n"),
			[]string{"line 8: sources[0].destinations[0].retry_max_delay: 0s: must be positive"}, ErrInvalid},
		{"destination retry_initial above default retry_max_delay", dest(destURL + "        retry_initial: 3h\n"),
			[]string{"line 8: sources[0].destinations[0].retry_initial: 3h is longer than retry_max_delay (2h)"}, ErrInvalid},
		{"destination retry_initial above retry_max_delay", dest(destURL + "        retry_initial: 1m\n        retry_max_delay: 30s\n"),
			[]string{"line 8: sources[0].destinations[0].retry_initial: 1m is longer than retry_max_delay (30s)"}, ErrInvalid},
		{"destination bad retry duration", dest(destURL + "        retry_max_delay: 2 days\n"),
			[]string{"line 8: sources[0].destinations[0].retry_max_delay: \"2 days\": want a duration like 30s, 5m, 2h or 7d"}, ErrInvalid},
		{"destination bad type pattern", dest(destURL + "        types: [charge.*, \"charge.[\"]\n"),
			[]string{"line 8: sources[0].destinations[0].types[1]: \"charge.[\": not a valid pattern"}, ErrInvalid},
		{"destination empty type pattern", dest(destURL + "        types: [\"\"]\n"),
			[]string{"sources[0].destinations[0].types[0]: \"\": not a valid pattern"}, ErrInvalid},
		{"destination negative pause_after", dest(destURL + "        pause_after: -1\n"),
			[]string{"line 8: sources[0].destinations[0].pause_after: -1: want 0 (never pause) or more"}, ErrInvalid},
		{"destination zero pause_for", dest(destURL + "        pause_for: 0s\n"),
			[]string{"line 8: sources[0].destinations[0].pause_for: 0s: must be positive"}, ErrInvalid},
		{"destination zero max_in_flight", dest(destURL + "        max_in_flight: 0\n"),
			[]string{"line 8: sources[0].destinations[0].max_in_flight: 0: want 1 to 1024"}, ErrInvalid},
		{"destination negative max_in_flight", dest(destURL + "        max_in_flight: -1\n"),
			[]string{"sources[0].destinations[0].max_in_flight: -1: want 1 to 1024"}, ErrInvalid},
		{"destination max_in_flight too large", dest(destURL + "        max_in_flight: 1025\n"),
			[]string{"line 8: sources[0].destinations[0].max_in_flight: 1025: want 1 to 1024"}, ErrInvalid},
		{"destination bad header name", dest(destURL + "        headers:\n          \"X Token\": abc\n"),
			[]string{"line 9: sources[0].destinations[0].headers.X Token: \"X Token\": not a valid header name"}, ErrInvalid},
		{"destination header name with colon", dest(destURL + "        headers:\n          \"X-Token:\": abc\n"),
			[]string{"line 9: sources[0].destinations[0].headers.X-Token:: \"X-Token:\": not a valid header name"}, ErrInvalid},
		{"destination empty header name", dest(destURL + "        headers:\n          \"\": abc\n"),
			[]string{"sources[0].destinations[0].headers.: \"\": not a valid header name"}, ErrInvalid},
		{"destination header Content-Type", dest(destURL + "        headers:\n          Content-Type: text/plain\n"),
			[]string{"line 9: sources[0].destinations[0].headers.Content-Type: \"Content-Type\": set by hookgate itself"}, ErrInvalid},
		{"destination header content-length", dest(destURL + "        headers: {content-length: \"5\"}\n"),
			[]string{"sources[0].destinations[0].headers.content-length: \"content-length\": set by hookgate itself"}, ErrInvalid},
		{"destination header HOST", dest(destURL + "        headers: {HOST: example.com}\n"),
			[]string{"sources[0].destinations[0].headers.HOST: \"HOST\": set by hookgate itself"}, ErrInvalid},
		{"destination header User-Agent", dest(destURL + "        headers: {User-Agent: curl}\n"),
			[]string{"sources[0].destinations[0].headers.User-Agent: \"User-Agent\": set by hookgate itself"}, ErrInvalid},
		{"destination header Webhook-Id", dest(destURL + "        headers: {Webhook-Id: x}\n"),
			[]string{"sources[0].destinations[0].headers.Webhook-Id: \"Webhook-Id\": set by hookgate itself"}, ErrInvalid},
		{"destination header webhook-signature", dest(destURL + "        headers: {webhook-signature: x}\n"),
			[]string{"sources[0].destinations[0].headers.webhook-signature: \"webhook-signature\": set by hookgate itself"}, ErrInvalid},
		{"destination header WEBHOOK-TIMESTAMP", dest(destURL + "        headers: {WEBHOOK-TIMESTAMP: \"1\"}\n"),
			[]string{"sources[0].destinations[0].headers.WEBHOOK-TIMESTAMP: \"WEBHOOK-TIMESTAMP\": set by hookgate itself"}, ErrInvalid},
		{"destination header X-Hookgate prefix", dest(destURL + "        headers: {x-HookGate-Attempt: \"1\"}\n"),
			[]string{"sources[0].destinations[0].headers.x-HookGate-Attempt: \"x-HookGate-Attempt\": set by hookgate itself"}, ErrInvalid},
		{"destination header twice in two cases", dest(destURL + "        headers:\n          X-Tenant: a\n          x-tenant: b\n"),
			[]string{"line 10: sources[0].destinations[0].headers.x-tenant: \"x-tenant\": same header as \"X-Tenant\""}, ErrInvalid},
		{"destination header value with LF", dest(destURL + "        headers:\n          X-Token: \"inline_secret_value\\nX-Evil: 1\"\n"),
			[]string{"line 9: sources[0].destinations[0].headers.X-Token: value contains CR, LF, NUL", "(the value is not shown)"}, ErrInvalid},
		{"destination header value with CR", dest(destURL + "        headers:\n          X-Token: \"inline_secret_value\\r\"\n"),
			[]string{"sources[0].destinations[0].headers.X-Token: value contains CR, LF, NUL"}, ErrInvalid},
		{"destination header value with NUL", dest(destURL + "        headers:\n          X-Token: \"inline_secret_value\\0\"\n"),
			[]string{"sources[0].destinations[0].headers.X-Token: value contains CR, LF, NUL"}, ErrInvalid},
		{"destination header value from env with LF", dest(destURL + "        headers: {Authorization: env:MULTILINE_TOKEN}\n"),
			[]string{"sources[0].destinations[0].headers.Authorization: value contains CR, LF, NUL"}, ErrInvalid},
		{"destination header value empty", dest(destURL + "        headers: {X-Token: \"\"}\n"),
			[]string{"sources[0].destinations[0].headers.X-Token: empty value"}, ErrInvalid},
		{"destination header value null", dest(destURL + "        headers:\n          X-Token:\n"),
			[]string{"line 9: sources[0].destinations[0].headers.X-Token: empty value"}, ErrInvalid},
		{"destination header value env unset", dest(destURL + "        headers:\n          Authorization: env:HOOKGATE_TEST_UNSET\n"),
			[]string{"line 9: sources[0].destinations[0].headers.Authorization", "env:HOOKGATE_TEST_UNSET is unset or empty"}, ErrSecret},
		{"destination header value file missing", dest(destURL + "        headers:\n          Authorization: file:" + missing + "\n"),
			[]string{"line 9: sources[0].destinations[0].headers.Authorization", "file:" + missing, "no such file"}, ErrSecret},
		{"destination header value bad env ref", dest(destURL + "        headers:\n          Authorization: \"env:\"\n"),
			[]string{"line 9: sources[0].destinations[0].headers.Authorization: ", "env: needs a name after the colon"}, ErrInvalid},
		{"destination header value a list", dest(destURL + "        headers:\n          Authorization: [a, b]\n"),
			[]string{"line 9: sources[0].destinations[0].headers.Authorization: want text, env:NAME or file:PATH, not a list"}, ErrInvalid},
		{"destination headers not a map", dest(destURL + "        headers: [a]\n"),
			[]string{"line 8: sources[0].destinations[0].headers: want a mapping, not a list"}, ErrInvalid},
		{"destination secret unset", dest(destURL + "        secret: env:HOOKGATE_TEST_UNSET\n"),
			[]string{"line 8: sources[0].destinations[0].secret", "env:HOOKGATE_TEST_UNSET is unset or empty"}, ErrSecret},
		{"destination secret not base64", dest(destURL + "        secret: env:BAD_WEBHOOK_SECRET\n"),
			[]string{"line 8: sources[0].destinations[0].secret", "want a Standard Webhooks secret"}, ErrSecret},
		{"destination secret inline", dest(destURL + "        secret: whsec_inline_secret_value\n"),
			[]string{"line 8: sources[0].destinations[0].secret: want env:NAME or file:PATH (the value is not shown)"}, ErrInvalid},
		{"bad listen", "listen: localhost\n",
			[]string{"listen: \"localhost\": want host:port"}, ErrInvalid},
		{"bad listen port", "listen: \":99999\"\n",
			[]string{"listen: \":99999\": want a port number"}, ErrInvalid},
		{"two documents", "listen: :80\n---\nlisten: :81\n",
			[]string{"more than one YAML document"}, ErrInvalid},
		{"bad yaml", "listen: [\n",
			[]string{"not valid YAML: "}, ErrInvalid},
		{"bad yaml on a line", "listen: a\n  b: c\n",
			[]string{"line 2: not valid YAML: mapping values are not allowed in this context"}, ErrInvalid},
		{"sources not a list", "sources: stripe\n",
			[]string{"line 1: sources: \"stripe\": want a list"}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse([]byte(tt.yaml), "", lookupTestEnv)
			if err == nil {
				t.Fatalf("parse succeeded, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
			if strings.Contains(err.Error(), "inline_secret_value") {
				t.Errorf("error %q repeats a secret", err)
			}
			for _, v := range testEnv {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error %q repeats the secret %q", err, v)
				}
			}
			// The user's words, not the decoder's: no YAML tags, no Go types.
			for _, goish := range []string{"!!", "cannot unmarshal", "in type", "into ", "config.", "yaml:", "map[", "[]"} {
				if strings.Contains(err.Error(), goish) {
					t.Errorf("error %q speaks Go or YAML internals (%q)", err, goish)
				}
			}
		})
	}
}

// Durations take days wherever the configuration has one, and print
// them back as days.
func TestParseDays(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte("dedupe: {window: 7d}\nretention: 30d\nsources:\n  - {name: gh, provider: github, secret: env:GITHUB_SECRET, window: 1d12h}\n"), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dedupe.Window != Duration(168*time.Hour) || cfg.Retention != Duration(720*time.Hour) || cfg.Sources[0].Window != Duration(36*time.Hour) {
		t.Errorf("window %v, retention %v, source window %v; want 168h, 720h, 36h",
			time.Duration(cfg.Dedupe.Window), time.Duration(cfg.Retention), time.Duration(cfg.Sources[0].Window))
	}
	out, err := cfg.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n  window: 7d\n", "\nretention: 30d\n", "\n    window: 1d12h\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("Redacted() does not contain %q:\n%s", want, out)
		}
	}
}

// Anchors, aliases and merge keys are checked where they are used.
func TestParseAnchors(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte(`
sources:
  - name: a
    provider: github
    secret: env:GITHUB_SECRET
    destinations:
      - &app {name: app, url: "http://127.0.0.1:3000/a", timeout: 5s}
  - name: b
    provider: github
    secret: env:GITHUB_SECRET
    destinations:
      - *app
      - &mid {<<: *app, name: app2, max_attempts: 3}
      - {<<: [*mid], name: app3, url: "http://127.0.0.1:3000/c"}
`), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	// Merged fields are fields the YAML sets: they keep their values
	// rather than taking the defaults.
	ds := cfg.Sources[1].Destinations
	if len(ds) != 3 || ds[0].Name != "app" || ds[0].Timeout != Duration(5*time.Second) ||
		ds[1].Name != "app2" || ds[1].Timeout != Duration(5*time.Second) || ds[1].MaxAttempts != 3 ||
		ds[2].Name != "app3" || ds[2].URL != "http://127.0.0.1:3000/c" || ds[2].Timeout != Duration(5*time.Second) || ds[2].MaxAttempts != 3 {
		t.Errorf("destinations = %+v", ds)
	}
}

// A configuration without sources is valid but accepts nothing: it warns.
func TestWarnings(t *testing.T) {
	t.Parallel()
	const noSources = "no sources: hookgate accepts nothing until one is configured (see docs/configuration.md)"
	for _, data := range []string{"", "listen: 127.0.0.1:8080\n", "sources: []\n"} {
		cfg, err := parse([]byte(data), "", lookupTestEnv)
		if err != nil {
			t.Fatalf("parse(%q): %v", data, err)
		}
		if got := cfg.Warnings(); len(got) != 1 || got[0] != noSources {
			t.Errorf("parse(%q).Warnings() = %q, want %q", data, got, noSources)
		}
	}
	cfg, err := parse([]byte("sources:\n  - {name: gh, provider: github, secret: env:GITHUB_SECRET}\n"), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Warnings(); len(got) != 0 {
		t.Errorf("Warnings() with a source = %q, want none", got)
	}
}

func TestDestinationDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte(`
lease: 31s
sources:
  - name: gh
    provider: github
    secret: env:GITHUB_SECRET
    destinations:
      - {name: a, url: "http://127.0.0.1:3000/a"}
      - name: b
        url: https://example.com/b
        secret: env:APP_WEBHOOK_SECRET
        on: transition
        types: [charge.*, "orders/*"]
        headers: {Authorization: env:SINK_TOKEN, X-Env: prod}
        timeout: 30s
        max_attempts: 1
        retry_initial: 1s
        retry_max_delay: 1s
        max_in_flight: 1024
        pause_after: 0
        pause_for: 5m
      - {name: audit, url: "https://audit.example.com/in", on: all, max_in_flight: 1, pause_after: 3}
`), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	ds := cfg.Sources[0].Destinations
	want := []Destination{
		{
			Name: "a", URL: "http://127.0.0.1:3000/a", On: OnEvent, Timeout: DefaultTimeout,
			MaxAttempts: DefaultMaxAttempts, RetryInitial: DefaultRetryInitial, RetryMaxDelay: DefaultRetryMaxDelay,
			MaxInFlight: DefaultMaxInFlight, PauseAfter: DefaultPauseAfter, PauseFor: DefaultPauseFor,
		},
		{
			Name: "b", URL: "https://example.com/b", On: OnTransition, Types: []string{"charge.*", "orders/*"},
			Headers: map[string]HeaderValue{
				"Authorization": {secret: Secret{ref: "env:SINK_TOKEN", value: testEnv["SINK_TOKEN"]}},
				"X-Env":         NewHeaderValue("prod"),
			},
			Timeout: Duration(30 * time.Second), MaxAttempts: 1, RetryInitial: Duration(time.Second),
			RetryMaxDelay: Duration(time.Second), MaxInFlight: 1024, PauseAfter: 0, PauseFor: Duration(5 * time.Minute),
		},
		{
			Name: "audit", URL: "https://audit.example.com/in", On: OnAll, Timeout: DefaultTimeout,
			MaxAttempts: DefaultMaxAttempts, RetryInitial: DefaultRetryInitial, RetryMaxDelay: DefaultRetryMaxDelay,
			MaxInFlight: 1, PauseAfter: 3, PauseFor: DefaultPauseFor,
		},
	}
	if len(ds) != len(want) {
		t.Fatalf("destinations = %+v", ds)
	}
	for i := range want {
		got := ds[i]
		got.Secret = Secret{}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("destinations[%d] =\n%#v\nwant\n%#v", i, got, want[i])
		}
	}
	if !ds[0].Secret.IsZero() || ds[1].Secret.Value() != testEnv["APP_WEBHOOK_SECRET"] {
		t.Errorf("destination secrets = %q, %q", ds[0].Secret.Value(), ds[1].Secret.Value())
	}
	if h := ds[1].Headers; h["Authorization"].Value() != testEnv["SINK_TOKEN"] || h["Authorization"].Ref() != "env:SINK_TOKEN" ||
		h["X-Env"].Value() != "prod" || h["X-Env"].Ref() != "" {
		t.Errorf("headers = %q %q, %q %q; want the resolved env:SINK_TOKEN and the literal prod",
			h["Authorization"].Value(), h["Authorization"].Ref(), h["X-Env"].Value(), h["X-Env"].Ref())
	}
	if cfg.Workers != DefaultWorkers || cfg.Batch != DefaultBatch || cfg.Retention != DefaultRetention || cfg.SweepEvery != DefaultSweepEvery {
		t.Errorf("processing defaults = %d %d %v %v", cfg.Workers, cfg.Batch, cfg.Retention, cfg.SweepEvery)
	}
	if !cfg.Admin.Token.IsZero() {
		t.Errorf("admin token set without admin in the file")
	}
}

// TestDestinationGood has one case per accepted value at or near the edge
// of each destination rule that TestParseErrors probes from the other side.
func TestDestinationGood(t *testing.T) {
	t.Parallel()
	secretFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secretFile, []byte("Bearer from_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		fields string // the destination's fields besides name and url
		lease  string // top-level lease; "" leaves it out
		check  func(Destination) bool
	}{
		{"on event", "on: event", "", func(d Destination) bool { return d.On == OnEvent }},
		{"on transition", "on: transition", "", func(d Destination) bool { return d.On == OnTransition }},
		{"on all", "on: all", "", func(d Destination) bool { return d.On == OnAll }},
		{"one attempt", "max_attempts: 1", "", func(d Destination) bool { return d.MaxAttempts == 1 }},
		{"retry_initial equal to retry_max_delay", "{retry_initial: 1m, retry_max_delay: 1m}", "",
			func(d Destination) bool {
				return d.RetryInitial == Duration(time.Minute) && d.RetryMaxDelay == Duration(time.Minute)
			}},
		{"retry_max_delay raised", "retry_max_delay: 24h", "", func(d Destination) bool {
			return d.RetryInitial == DefaultRetryInitial && d.RetryMaxDelay == Duration(24*time.Hour)
		}},
		{"retry_initial tiny", "retry_initial: 1ms", "", func(d Destination) bool { return d.RetryInitial == Duration(time.Millisecond) }},
		{"max_in_flight 1", "max_in_flight: 1", "", func(d Destination) bool { return d.MaxInFlight == 1 }},
		{"max_in_flight 1024", "max_in_flight: 1024", "", func(d Destination) bool { return d.MaxInFlight == MaxInFlightLimit }},
		{"header literal", "headers: {X-Env: prod}", "", func(d Destination) bool { return d.Headers["X-Env"].Value() == "prod" }},
		{"header literal with tab and colon", `headers: {X-Note: "a:\tb"}`, "", func(d Destination) bool { return d.Headers["X-Note"].Value() == "a:\tb" }},
		{"header from env", "headers: {Authorization: env:SINK_TOKEN}", "",
			func(d Destination) bool { return d.Headers["Authorization"].Value() == testEnv["SINK_TOKEN"] }},
		{"header from file", "headers: {Authorization: file:" + secretFile + "}", "",
			func(d Destination) bool { return d.Headers["Authorization"].Value() == "Bearer from_file" }},
		{"header token characters", "headers: {\"X-A!#$%&'*+.^_`|~1\": v}", "", func(d Destination) bool { return len(d.Headers) == 1 }},
		{"header near a reserved name", "headers: {X-Content-Type: a, Hostname: b, X-Hookgate: c, Webhook-Idx: d}", "",
			func(d Destination) bool { return len(d.Headers) == 4 }},
		{"timeout that just fits the lease", "timeout: 59s", "1m", func(d Destination) bool { return d.Timeout == Duration(59*time.Second) }},
		{"lease of 1s with a short timeout", "timeout: 1ms", "1001ms", func(d Destination) bool { return d.Timeout == Duration(time.Millisecond) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := "sources:\n  - name: s\n    provider: github\n    secret: env:GITHUB_SECRET\n    destinations:\n" +
				"      - name: app\n        url: http://127.0.0.1:3000/in\n"
			if strings.HasPrefix(tt.fields, "{") {
				for _, f := range strings.Split(strings.Trim(tt.fields, "{}"), ", ") {
					data += "        " + f + "\n"
				}
			} else {
				data += "        " + tt.fields + "\n"
			}
			if tt.lease != "" {
				data = "lease: " + tt.lease + "\n" + data
			}
			cfg, err := parse([]byte(data), "", lookupTestEnv)
			if err != nil {
				t.Fatalf("parse(%q): %v", data, err)
			}
			if d := cfg.Sources[0].Destinations[0]; !tt.check(d) {
				t.Errorf("parse(%q) = %+v", data, d)
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate() after parse = %v", err)
			}
		})
	}
}

func TestHeaderValueNeverPrinted(t *testing.T) {
	t.Parallel()
	const value = "Bearer do_not_print"
	d := Destination{Name: "a", Headers: map[string]HeaderValue{"Authorization": NewHeaderValue(value)}}
	h := d.Headers["Authorization"]

	var logged, jsonLogged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("destination", "header", h, "destination", d)
	slog.New(slog.NewJSONHandler(&jsonLogged, nil)).Info("destination", "header", h, "destination", d)
	js, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	ym, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for form, out := range map[string]string{
		"%v": fmt.Sprintf("%v", d), "%+v": fmt.Sprintf("%+v", d), "%#v": fmt.Sprintf("%#v", d),
		"Sprint": fmt.Sprint(h), "%q": fmt.Sprintf("%q", h), "%#v value": fmt.Sprintf("%#v", h),
		"json": string(js), "yaml": string(ym), "slog text": logged.String(), "slog json": jsonLogged.String(),
	} {
		if strings.Contains(out, "do_not_print") {
			t.Errorf("%s prints the header value: %s", form, out)
		}
		if !strings.Contains(out, "****") {
			t.Errorf("%s does not print ****: %s", form, out)
		}
	}
	if h.Value() != value || h.Ref() != "" {
		t.Errorf("Value(), Ref() = %q, %q", h.Value(), h.Ref())
	}
}

func TestDestinationWithDefaults(t *testing.T) {
	t.Parallel()
	got := Destination{Name: "a", URL: "http://127.0.0.1/a"}.WithDefaults()
	want := Destination{
		Name: "a", URL: "http://127.0.0.1/a", On: OnEvent, Timeout: DefaultTimeout,
		MaxAttempts: DefaultMaxAttempts, RetryInitial: DefaultRetryInitial, RetryMaxDelay: DefaultRetryMaxDelay,
		MaxInFlight: DefaultMaxInFlight, PauseAfter: DefaultPauseAfter, PauseFor: DefaultPauseFor,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WithDefaults() =\n%#v\nwant\n%#v", got, want)
	}
	if err := (Source{Name: "gh", Provider: "github", Secret: NewSecret("s"), Destinations: []Destination{got}}).Validate(); err != nil {
		t.Errorf("Validate() of the defaults = %v", err)
	}
	set := Destination{On: OnAll, MaxInFlight: 3, RetryInitial: Duration(time.Minute), MaxAttempts: -1}.WithDefaults()
	if set.On != OnAll || set.MaxInFlight != 3 || set.RetryInitial != Duration(time.Minute) || set.MaxAttempts != -1 || set.RetryMaxDelay != DefaultRetryMaxDelay {
		t.Errorf("WithDefaults() changed set fields: %+v", set)
	}
}

func TestLeaseInCode(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Lease = Duration(11 * time.Second)
	d := Destination{Name: "app", URL: "http://127.0.0.1/a"}.WithDefaults()
	cfg.Sources = []Source{{Name: "gh", Provider: "github", Secret: NewSecret("s"), Destinations: []Destination{d}}}
	if err := cfg.Validate(); err != nil {
		t.Errorf("lease 11s with timeout 10s: Validate() = %v", err)
	}
	cfg.Lease = Duration(10*time.Second + 999*time.Millisecond)
	err := cfg.Validate()
	const want = "lease: 10.999s is shorter than sources[0].destinations[0].timeout (10s) + 1s: raise lease to at least 11s or lower that timeout"
	if err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want %q", err, want)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("Validate() = %v, not ErrInvalid", err)
	}
	cfg.Lease = Duration(500 * time.Millisecond)
	if err := cfg.Validate(); err == nil || err.Error() != "lease: 500ms: want at least 1s" {
		t.Errorf("Validate() = %v, want only the 1s minimum", err)
	}
}

func TestAdminToken(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte("admin: {token: env:HOOKGATE_ADMIN_TOKEN}\n"), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Admin.Token.Value(); got != testEnv["HOOKGATE_ADMIN_TOKEN"] {
		t.Errorf("admin token = %q", got)
	}
}

// admin.listen and metrics.token are read as written; addresses that
// cannot share a socket with listen are accepted.
func TestAdminListenAndMetricsToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ listen, admin string }{
		{"127.0.0.1:8080", "127.0.0.1:9090"},
		{"127.0.0.1:8080", "127.0.0.2:8080"},
		{"127.0.0.1:0", "127.0.0.1:0"},
		{":8080", "[::1]:9090"},
	} {
		cfg, err := parse(fmt.Appendf(nil, "listen: %q\nadmin: {listen: %q}\nmetrics: {token: env:HOOKGATE_ADMIN_TOKEN}\n",
			tc.listen, tc.admin), "", lookupTestEnv)
		if err != nil {
			t.Errorf("listen %s, admin.listen %s: %v", tc.listen, tc.admin, err)
			continue
		}
		if cfg.Admin.Listen != tc.admin || cfg.Metrics.Token.Value() != testEnv["HOOKGATE_ADMIN_TOKEN"] {
			t.Errorf("admin.listen %q, metrics.token %q", cfg.Admin.Listen, cfg.Metrics.Token.Value())
		}
	}
}

func TestValidateDestinationInCode(t *testing.T) {
	t.Parallel()
	s := Source{Name: "gh", Provider: "github", Secret: NewSecret("s"), Destinations: []Destination{
		Destination{
			Name: "a", URL: "http://127.0.0.1/a", MaxAttempts: 1, Secret: NewSecret("whsec_dGVzdA=="),
			Headers: map[string]HeaderValue{"Authorization": NewHeaderValue("Bearer t")},
		}.WithDefaults(),
		{
			Name: "b", URL: "http://127.0.0.1/b", Secret: NewSecret("not base64"),
			Headers: map[string]HeaderValue{"Host": NewHeaderValue("x"), "X-A": NewHeaderValue("a\nb"), "X-B": {}},
		},
	}}
	err := s.Validate()
	for _, w := range []string{
		"destinations[1].on: \"\"", "destinations[1].timeout: 0s", "destinations[1].max_attempts: 0",
		"destinations[1].secret", "destinations[1].retry_initial: 0s", "destinations[1].retry_max_delay: 0s",
		"destinations[1].max_in_flight: 0",
		"destinations[1].headers.Host: \"Host\": set by hookgate",
		"destinations[1].headers.X-A: value contains", "destinations[1].headers.X-B: empty value",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() = %v, want it to contain %q", err, w)
		}
	}
	if err != nil && strings.Contains(err.Error(), "destinations[0]") {
		t.Errorf("Validate() flags the valid destination: %v", err)
	}
}

func TestParseCollectsAllErrors(t *testing.T) {
	t.Parallel()
	_, err := parse([]byte("max_body: 0B\nsources:\n  - {name: a, provider: strpe}\n  - {name: a, provider: github}\n"), "", lookupTestEnv)
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v holds no *FieldError", err)
	}
	for _, w := range []string{
		"line 1: max_body: 0B: must be positive",
		"line 3: sources[0].provider: unknown provider \"strpe\"",
		"line 4: sources[1].secret: required for provider github",
		"line 4: sources[1].name: \"a\": already used by sources[0]",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error\n%v\ndoes not contain %q", err, w)
		}
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("from_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hookgate.yaml")
	data := "sources:\n  - name: gh\n    provider: github\n    secret: file:" + secretFile + "\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := cfg.Source("gh")
	if !ok || s.Secret.Value() != "from_file" {
		t.Fatalf("Source(gh) = %+v, %v; want secret from_file", s, ok)
	}
	if _, ok := cfg.Source("none"); ok {
		t.Error("Source(none) found a source")
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("listen: :80\nport: 81\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Load(bad) = %v, want an error naming the file and line 2", err)
	}
	if _, err := Load(filepath.Join(dir, "absent.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(absent) = %v, want ErrNotExist", err)
	}
}

func TestLoadSchemaRelative(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "schemas"), 0o755); err != nil {
		t.Fatal(err)
	}
	schema := filepath.Join(dir, "schemas", "event.json")
	if err := os.WriteFile(schema, []byte(`{"type":"object"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "abs.json")
	secret := filepath.Join(dir, "secret")
	for _, f := range []string{abs, secret} {
		if err := os.WriteFile(f, []byte(`{}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "hookgate.yaml")
	data := "sources:\n" +
		"  - {name: a, provider: github, secret: file:" + secret + ", schema: schemas/event.json}\n" +
		"  - {name: b, provider: github, secret: file:" + secret + ", schema: " + abs + "}\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Sources[0].Schema; got != schema {
		t.Errorf("relative schema = %q, want %q", got, schema)
	}
	if got := cfg.Sources[1].Schema; got != abs {
		t.Errorf("absolute schema = %q, want %q", got, abs)
	}
	// The same file parsed from another directory does not find the schema.
	if _, err := parse([]byte(data), t.TempDir(), os.LookupEnv); err == nil || !strings.Contains(err.Error(), "sources[0].schema") {
		t.Errorf("parse from another directory = %v, want a schema error", err)
	}
}

func TestSQLitePath(t *testing.T) {
	t.Parallel()
	for db, want := range map[string]string{
		"sqlite:hookgate.db":     "hookgate.db",
		"sqlite:/var/lib/h.db":   "/var/lib/h.db",
		"postgres://localhost/h": "",
		"hookgate.db":            "",
	} {
		if got := (Config{Database: db}).SQLitePath(); got != want {
			t.Errorf("SQLitePath(%q) = %q, want %q", db, got, want)
		}
	}
}

func TestSourceValidate(t *testing.T) {
	t.Parallel()
	ok := Source{Name: "gh", Provider: "github", Secret: NewSecret("s")}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
	bad := Source{Name: "gh", Provider: "github", Key: []string{"path"}}
	err := bad.Validate()
	for _, w := range []string{"secret: required", "key[0]: bad selector \"path\""} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() = %v, want it to contain %q", err, w)
		}
	}
	if err != nil && strings.Contains(err.Error(), "sources[") {
		t.Errorf("Source.Validate paths are not relative: %v", err)
	}
}

func TestDefaultReplayGuard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  Source
		want string
	}{
		{"stripe: all signed", Source{Provider: "stripe"}, ReplayGuardOff},
		{"github: delivery header", Source{Provider: "github"}, ReplayGuardOn},
		{"github keyed on the body", Source{Provider: "github", Key: []string{"json:id"}, Scope: []string{"json:action"}}, ReplayGuardOff},
		{"github keyed on the body, event header scope", Source{Provider: "github", Key: []string{"json:id"}}, ReplayGuardOn},
		{"shopify: shop domain", Source{Provider: "shopify", Key: []string{"json:id"}, Scope: []string{"json:topic"}}, ReplayGuardOn},
		{"standard: signed webhook-id", Source{Provider: "standard"}, ReplayGuardOff},
		{"standard with a path tenant", Source{Provider: "standard", Tenant: "path"}, ReplayGuardOn},
		{"standard keyed on another header", Source{Provider: "standard", Key: []string{"header:X-Id"}}, ReplayGuardOn},
		{"hubspot with a query tenant", Source{Provider: "hubspot", Tenant: "query:portal"}, ReplayGuardOn},
		{"hmac keyed on the body", Source{Provider: "hmac", Key: []string{"json:id"}, Tenant: "const:acme"}, ReplayGuardOff},
		{"hmac keyed on a header", Source{Provider: "hmac", Key: []string{"header:X-Event-Id"}}, ReplayGuardOn},
		{"salesforce", Source{Provider: "salesforce"}, ReplayGuardOff},
	} {
		if got := tc.src.DefaultReplayGuard(); got != tc.want {
			t.Errorf("%s: DefaultReplayGuard() = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestReplayGuardExplicit(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte("sources:\n  - name: gh\n    provider: github\n    secret: env:GITHUB_SECRET\n    replay_guard: \"off\"\n"), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Sources[0].ReplayGuard; got != ReplayGuardOff {
		t.Errorf("replay_guard = %q, want the explicit off kept", got)
	}
}

func TestPostgresDatabase(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("database: postgres://hookgate@db.internal:5432/hookgate?pool_max_conns=20\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PostgresURL() == "" || cfg.SQLitePath() != "" {
		t.Errorf("PostgresURL() = %q, SQLitePath() = %q", cfg.PostgresURL(), cfg.SQLitePath())
	}
	_, err = Parse([]byte("database: \"postgres://u:s3cret@host:port/x\"\n"))
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("bad URL: %v; want an error that does not show the password", err)
	}
}

// An admin or metrics token of blanks would open the admin API or
// /metrics to anyone who sends the same blanks.
func TestBlankAdminToken(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"admin", "metrics"} {
		_, err := Parse([]byte(field + ":\n  token: file:" + path + "\n"))
		if !errors.Is(err, ErrSecret) || !strings.Contains(err.Error(), field+".token") || !strings.Contains(err.Error(), "whitespace only") {
			t.Errorf("Parse = %v, want %s.token refused as whitespace only", err, field)
		}
	}
}
