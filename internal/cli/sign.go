package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/internal/trigger"
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
	token := fs.String("token", "", "URL token ("+strings.Join(provider.Where(func(p *provider.Provider) bool { return p.Token }), ", ")+")")
	target := fs.String("url", "", "the `URL` the request goes to (default: the source's URL, or the demo source's http://"+config.DefaultListen+"/in/demo)")
	event := fs.String("event", "", "the event `TYPE` the provider names in a header: X-GitHub-Event (default ping), X-Shopify-Topic (default orders/create)")
	tenant := fs.String("tenant", "", "the `TENANT`: the URL's last segment for a source whose tenant is the path; X-Shopify-Shop-Domain for shopify (default example.myshopify.com)")
	var sig config.Signature
	var headers headerFlags
	orgs := strings.Join(provider.Where(func(p *provider.Provider) bool { return p.OrganizationID != nil }), ", ")
	sigs := strings.Join(provider.Where(func(p *provider.Provider) bool { return p.Signature != nil }), ", ")
	fs.StringVar(&sc.Provider, "provider", "", "provider: "+strings.Join(provider.Names(), "|"))
	fs.StringVar(&sc.OrganizationID, "organization-id", "", orgs+" organization id")
	fs.StringVar(&sig.Header, "header", "", sigs+": signature header")
	fs.StringVar(&sig.Algorithm, "algorithm", "sha256", sigs+": sha1|sha256|sha512")
	fs.StringVar(&sig.Encoding, "encoding", "hex", sigs+": hex|base64")
	fs.StringVar(&sig.Prefix, "prefix", "", sigs+": prefix of the signature value, e.g. sha256=")
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
		if p, ok := provider.Lookup(sc.Provider); ok && p.Signature != nil {
			sc.Signature = &sig
		}
	}
	if *target == "" {
		*target = trigger.IntakeURL(base, sc, *tenant)
	}
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		return usagef("sign: --url %q is not an absolute URL", *target)
	}
	body, err := io.ReadAll(std.Stdin)
	if err != nil {
		return fmt.Errorf("sign: reading the body from stdin: %w", err)
	}
	sent := trigger.ProviderHeaders(sc.Provider, *event, *tenant, time.Now())
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return usagef("sign: -H %q: want \"Name: value\"", h)
		}
		sent.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	req, err := trigger.SignedRequest(ctx, sc, u.String(), body, sent)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	for _, name := range sortedHeaders(req.Header) {
		fmt.Fprintf(std.Stdout, "%s: %s\n", name, req.Header.Get(name))
	}
	fmt.Fprintf(std.Stdout, "\n%s\n", curlLine(req, string(body)))
	return nil
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
