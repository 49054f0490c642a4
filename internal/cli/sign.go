package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

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
the signed headers and a curl line that sends it to hookgate. Use it to
try a source without the provider.`,
		examples: []string{
			`sign --provider standard --secret whsec_… < event.json`,
			`sign --provider github --secret s3cret --url http://127.0.0.1:8080/in/gh -H "X-GitHub-Delivery: 1" < push.json`,
		},
	}, std)
	var sc config.Source
	secret := fs.String("secret", "", "signing secret (standard: whsec_...)")
	token := fs.String("token", "", "URL token (salesforce, shippo)")
	target := fs.String("url", "", "the URL the request goes to (default http://127.0.0.1:8080/in/<provider>)")
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
	if sc.Provider == "" {
		return usagef("sign: --provider is required")
	}
	sc.Name = sc.Provider
	sc.Secret = config.NewSecret(*secret)
	sc.Token = config.NewSecret(*token)
	if sc.Provider == config.ProviderHMAC {
		sc.Signature = &sig
	}
	if *target == "" {
		*target = "http://127.0.0.1:8080/in/" + sc.Provider
	}
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		return usagef("sign: --url %q is not an absolute URL", *target)
	}
	body, err := io.ReadAll(std.Stdin)
	if err != nil {
		return fmt.Errorf("sign: reading the body from stdin: %w", err)
	}
	signer, err := source.NewSigner(sc)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType(sc.Provider))
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return usagef("sign: -H %q: want \"Name: value\"", h)
		}
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	if err := signer.Sign(req, body); err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	for _, name := range sortedHeaders(req.Header) {
		fmt.Fprintf(std.Stdout, "%s: %s\n", name, req.Header.Get(name))
	}
	fmt.Fprintf(std.Stdout, "\n%s\n", curlLine(req, string(body)))
	return nil
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
