package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/source"
)

func init() {
	register("sign", "sign a request body (stdin) for a provider and print the headers and a curl line", runSign)
}

// headerFlags collects repeated -H "Name: value" flags.
type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }

func runSign(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "sign",
		text: `Sign a request body, read from stdin, as the provider would, and print
the headers it sends and a curl line that sends it to hookgate. Use it to
try a source without the provider. With --config (and --source when it
has several), the source's provider, secrets and URL come from the
config; without, --provider and its secrets are given and the URL is the
demo source's, as 'hookgate serve' without a config serves it.

Besides the signature, the headers the provider sends are set: a fresh
webhook-id (standard), X-GitHub-Delivery and X-GitHub-Event (github),
X-Shopify-Webhook-Id, -Event-Id, -Topic, -Shop-Domain, -Triggered-At and
-API-Version (shopify), SOAPAction (salesforce). -H sets any header,
these included.`,
		examples: []string{
			`sign --provider standard --secret whsec_… < event.json`,
			`sign --config hookgate.yaml --source gh --event push < push.json`,
			`sign --provider github --secret s3cret --url http://127.0.0.1:8080/in/gh -H "X-GitHub-Delivery: 1" < push.json`,
		},
	}, std)
	var sc config.Source
	configPath := fs.String("config", "", "config `FILE` to take the source from (its secrets must be set)")
	name := fs.String("source", "", "the config's source `NAME` to sign for (default: its only one)")
	secret := fs.String("secret", "", "signing secret (standard: whsec_...)")
	token := fs.String("token", "", "URL token (salesforce, shippo)")
	target := fs.String("url", "", "the `URL` the request goes to (default: the source's URL, or the demo source's http://"+config.DefaultListen+"/in/demo)")
	event := fs.String("event", "", "the event `TYPE` the provider names in a header: X-GitHub-Event (default ping), X-Shopify-Topic (default orders/create)")
	tenant := fs.String("tenant", "", "the `TENANT`: the URL's last segment for a source whose tenant is the path; X-Shopify-Shop-Domain for shopify (default example.myshopify.com)")
	var sig config.Signature
	var headers headerFlags
	fs.StringVar(&sc.Provider, "provider", "", "provider: standard|stripe|github|shopify|hubspot|salesforce|shippo|hmac")
	fs.StringVar(&sc.OrganizationID, "organization-id", "", "salesforce organization id")
	fs.StringVar(&sig.Header, "header", "", "hmac: signature header")
	fs.StringVar(&sig.Algorithm, "algorithm", "sha256", "hmac: sha1|sha256|sha512")
	fs.StringVar(&sig.Encoding, "encoding", "hex", "hmac: hex|base64")
	fs.StringVar(&sig.Prefix, "prefix", "", "hmac: prefix of the signature value, e.g. sha256=")
	fs.Var(&headers, "H", `extra request header "Name: value" (repeatable), e.g. -H "webhook-id: msg_1"`)
	if err := fs.parse(args, false); err != nil {
		return err
	}
	base := "http://" + config.DefaultListen
	switch {
	case *configPath != "":
		if sc.Provider != "" || *secret != "" || *token != "" || sc.OrganizationID != "" || sig.Header != "" {
			return usagef("sign: --config takes the provider and its secrets from the source; drop --provider, --secret, --token, --organization-id and --header")
		}
		cfg, err := config.Load(*configPath)
		if err != nil {
			return err
		}
		src, err := configSource(cfg, *name)
		if err != nil {
			return err
		}
		sc = *src
		if base, err = listenBase(cfg.Listen); err != nil {
			return err
		}
	case *name != "":
		return usagef("sign: --source names a source of --config; give --config")
	case sc.Provider == "":
		return usagef("sign: --provider is required without --config")
	default:
		sc.Name = demoSource("").Name
		sc.Secret = config.NewSecret(*secret)
		sc.Token = config.NewSecret(*token)
		if sc.Provider == config.ProviderHMAC {
			sc.Signature = &sig
		}
	}
	if *target == "" {
		*target = intakeURL(base, sc, *tenant)
	}
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		return usagef("sign: --url %q is not an absolute URL", *target)
	}
	body, err := io.ReadAll(std.Stdin)
	if err != nil {
		return fmt.Errorf("sign: reading the body from stdin: %w", err)
	}
	sent := providerHeaders(sc.Provider, *event, *tenant, time.Now())
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return usagef("sign: -H %q: want \"Name: value\"", h)
		}
		sent.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	req, err := signedRequest(ctx, sc, u.String(), body, sent)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	for _, name := range sortedHeaders(req.Header) {
		fmt.Fprintf(std.Stdout, "%s: %s\n", name, req.Header.Get(name))
	}
	fmt.Fprintf(std.Stdout, "\n%s\n", curlLine(req, string(body)))
	return nil
}

// intakeURL is where a gateway at base takes sc's deliveries: /in/{source},
// and /{tenant} after it for a source whose tenant is the path.
func intakeURL(base string, sc config.Source, tenant string) string {
	u := base + "/in/" + sc.Name
	if sc.Tenant == string(config.SelectPath) && tenant != "" {
		u += "/" + url.PathEscape(tenant)
	}
	return u
}

// signedRequest is the POST of body to target as sc's provider sends it:
// its content type, then sent (which may replace it), signed last so that
// the signature covers what it signs besides the body (standard's
// webhook-id, HubSpot's URL).
func signedRequest(ctx context.Context, sc config.Source, target string, body []byte, sent http.Header) (*http.Request, error) {
	signer, err := source.NewSigner(sc)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType(sc.Provider))
	for name, values := range sent {
		req.Header[name] = values
	}
	if err := signer.Sign(req, body); err != nil {
		return nil, err
	}
	return req, nil
}

// configSource is the source of cfg called name, or its only source when
// name is empty.
func configSource(cfg config.Config, name string) (*config.Source, error) {
	names := make([]string, len(cfg.Sources))
	for i, s := range cfg.Sources {
		names[i] = s.Name
	}
	if name == "" {
		if len(cfg.Sources) != 1 {
			return nil, usagef("sign: the config has %d sources (%s): name one with --source", len(cfg.Sources), strings.Join(names, ", "))
		}
		return &cfg.Sources[0], nil
	}
	src, ok := cfg.Source(name)
	if !ok {
		return nil, usagef("sign: the config has no source %q (it has %s)", name, strings.Join(names, ", "))
	}
	return src, nil
}

// providerHeaders are the headers, other than the signature's, that the
// provider sends with every delivery and that its preset reads: the
// delivery's id, the event's type, the shop. Each id is fresh, so that
// every signed request is a new event.
func providerHeaders(provider, event, tenant string, now time.Time) http.Header {
	h := http.Header{}
	switch provider {
	case config.ProviderGitHub:
		h.Set("X-GitHub-Delivery", newUUID())
		h.Set("X-GitHub-Event", cmp.Or(event, "ping"))
	case config.ProviderShopify:
		h.Set("X-Shopify-Webhook-Id", newUUID())
		h.Set("X-Shopify-Event-Id", newUUID())
		h.Set("X-Shopify-Topic", cmp.Or(event, "orders/create"))
		h.Set("X-Shopify-Shop-Domain", cmp.Or(tenant, "example.myshopify.com"))
		h.Set("X-Shopify-Triggered-At", now.UTC().Format(time.RFC3339Nano))
		h.Set("X-Shopify-API-Version", shopifyAPIVersion)
	case config.ProviderSalesforce:
		// Outbound messages carry an empty SOAP action.
		h.Set("SOAPAction", `""`)
	}
	return h
}

// shopifyAPIVersion is the API version sign's Shopify requests name; the
// preset keeps it with the event and reads nothing from it.
const shopifyAPIVersion = "2025-10"

// newUUID returns a random (version 4) UUID, the form of GitHub's and
// Shopify's delivery ids.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func contentType(provider string) string {
	if provider == config.ProviderSalesforce {
		return "text/xml; charset=utf-8"
	}
	return "application/json"
}

func sortedHeaders(h http.Header) []string {
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// curlLine prints a curl command that sends req with body.
func curlLine(req *http.Request, body string) string {
	var b strings.Builder
	b.WriteString("curl -i -X POST " + shellQuote(req.URL.String()))
	for _, name := range sortedHeaders(req.Header) {
		b.WriteString(" -H " + shellQuote(name+": "+req.Header.Get(name)))
	}
	b.WriteString(" --data-binary " + shellQuote(body))
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
