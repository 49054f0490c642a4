package cli

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/verify"
)

func init() {
	register("trigger", "send a provider's signed example event to a source of a running gateway (--list names them)", runTrigger)
}

// fixtureFiles holds the bodies trigger sends, one text/template per
// event under fixtures/PROVIDER/ (see fixtureFuncs for what they call).
//
//go:embed fixtures
var fixtureFiles embed.FS

// fixture is one event of a provider, as trigger sends it.
type fixture struct {
	// provider is the preset that reads it.
	provider string
	// event is the provider's name for it: the type in the body
	// (stripe, standard, shippo), X-GitHub-Event, X-Shopify-Topic,
	// HubSpot's subscriptionType, the sObject of a Salesforce outbound
	// message.
	event string
	// file is its template under fixtures/{provider}/.
	file string
	// about says what it is, for --list.
	about string
}

// fixtures are trigger's events; each provider's first is its default,
// the one sent without an EVENT argument.
var fixtures = []fixture{
	{config.ProviderStandard, "contact.created", "contact.created.json", "a Standard Webhooks event: a contact was created"},
	{config.ProviderStandard, "invoice.paid", "invoice.paid.json", "a Standard Webhooks event: an invoice was paid"},
	{config.ProviderStripe, "payment_intent.succeeded", "payment_intent.succeeded.json", "a PaymentIntent was paid"},
	{config.ProviderStripe, "charge.succeeded", "charge.succeeded.json", "a card charge succeeded"},
	{config.ProviderStripe, "charge.refunded", "charge.refunded.json", "a charge was refunded in full (entity state refunded)"},
	{config.ProviderStripe, "customer.created", "customer.created.json", "a customer was created"},
	{config.ProviderStripe, "checkout.session.completed", "checkout.session.completed.json", "a Checkout session was paid"},
	{config.ProviderGitHub, "push", "push.json", "a commit pushed to main"},
	{config.ProviderGitHub, "pull_request", "pull_request.json", "a pull request was opened"},
	{config.ProviderGitHub, "ping", "ping.json", "the ping GitHub sends when a webhook is created"},
	{config.ProviderGitHub, "issues", "issues.json", "an issue was opened"},
	{config.ProviderShopify, "orders/create", "orders-create.json", "an order was placed"},
	{config.ProviderShopify, "orders/paid", "orders-paid.json", "an order was paid"},
	{config.ProviderShopify, "customers/create", "customers-create.json", "a customer signed up"},
	{config.ProviderHubSpot, "contact.creation", "contact.creation.json", "a batch of two contact.creation events"},
	{config.ProviderHubSpot, "contact.propertyChange", "contact.propertyChange.json", "a contact's lifecycle stage became customer"},
	{config.ProviderHubSpot, "deal.propertyChange", "deal.propertyChange.json", "a batch: a deal's stage and amount changed"},
	{config.ProviderSalesforce, "Opportunity", "Opportunity.xml", "an outbound message: an opportunity was won"},
	{config.ProviderSalesforce, "Lead", "Lead.xml", "an outbound message: a lead came in from the web"},
	{config.ProviderShippo, "track_updated", "track_updated.json", "a parcel's tracking status became TRANSIT"},
}

// triggerProviders are the providers trigger has fixtures for, in the
// order --list shows them. hmac has none: its events are keyed by the
// selectors of the config, which no fixture can know.
func triggerProviders() []string {
	var ps []string
	for _, f := range fixtures {
		if !slices.Contains(ps, f.provider) {
			ps = append(ps, f.provider)
		}
	}
	return ps
}

// findFixture is provider's fixture named event, or its default when
// event is empty. Event names are matched without regard to case.
func findFixture(provider, event string) (fixture, error) {
	var names []string
	for _, f := range fixtures {
		if f.provider != provider {
			continue
		}
		if event == "" || strings.EqualFold(f.event, event) {
			return f, nil
		}
		names = append(names, f.event)
	}
	if names != nil {
		return fixture{}, usagef("trigger: %s has no event %q (it has %s; run 'hookgate trigger --list')", provider, event, strings.Join(names, ", "))
	}
	if provider == config.ProviderHMAC {
		return fixture{}, usagef("trigger: hmac has no example events: its events are keyed by the selectors of your config; sign a body of your own with 'hookgate sign'")
	}
	return fixture{}, usagef("trigger: unknown provider %q (want %s)", provider, strings.Join(triggerProviders(), ", "))
}

func runTrigger(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "trigger",
		args: "PROVIDER [EVENT] [flags]",
		text: `Send a provider's example event to a source of a running gateway, as
the provider sends it: a realistic body with fresh ids and timestamps (so
that each trigger is a new event, not a duplicate), every header the
provider sends, signed with the source's secret (Salesforce: the
source's organization id in the envelope, and its token; Shippo: its
signature or token). Without EVENT, the provider's typical event is
sent; --list names them all.

The source is the config's first of that provider, or --source. The
request goes to the source's URL on the config's listen address, or on
--url. One line says what was sent where and how the gateway answered;
a status other than 2xx is an error (exit status 1).`,
		examples: []string{
			`trigger --list`,
			`trigger stripe --config hookgate.yaml`,
			`trigger github pull_request --config hookgate.yaml --source gh`,
			`trigger shopify orders/paid --config hookgate.yaml --url https://hooks.example.com`,
		},
	}, std)
	configPath := fs.String("config", os.Getenv("HOOKGATE_CONFIG"), "config `FILE` the source, its secrets and the listen address come from (default $HOOKGATE_CONFIG)")
	name := fs.String("source", "", "the config's source `NAME` to send to (default: the first of PROVIDER)")
	target := fs.String("url", "", "the gateway's base `URL`, such as https://hooks.example.com, to send to instead of the config's listen address; a URL with a path is used as it is")
	tenant := fs.String("tenant", "", "the `TENANT`: the URL's last segment for a source whose tenant is the path; X-Shopify-Shop-Domain for shopify (default example.myshopify.com)")
	list := fs.Bool("list", false, "list the events of every provider (or of PROVIDER) and exit")
	// Flags may come before, between and after PROVIDER and EVENT.
	var pos []string
	for rest := args; ; {
		if err := fs.parse(rest, true); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(pos) > 2 {
		return usagef("trigger: unexpected argument %q (want PROVIDER [EVENT])", pos[2])
	}
	provider, event := "", ""
	if len(pos) > 0 {
		provider = strings.ToLower(pos[0])
	}
	if len(pos) > 1 {
		event = pos[1]
	}
	if *list {
		return listFixtures(std.Stdout, provider)
	}
	if provider == "" {
		return usagef("trigger: want a provider: %s (run 'hookgate trigger --list' for their events)", strings.Join(triggerProviders(), ", "))
	}
	fx, err := findFixture(provider, event)
	if err != nil {
		return err
	}
	if *configPath == "" {
		return usagef("trigger: give --config (or set HOOKGATE_CONFIG): the source, its secret and its URL come from the gateway's config")
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	sc, err := triggerSource(cfg, provider, *name)
	if err != nil {
		return err
	}
	if sc.Tenant == string(config.SelectPath) && *tenant == "" {
		return usagef("trigger: source %q takes its tenant from the URL's path; give --tenant", sc.Name)
	}
	base, err := listenBase(cfg.Listen)
	if err != nil {
		return err
	}
	to := intakeURL(base, sc, *tenant)
	if *target != "" {
		u, err := url.Parse(*target)
		if err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
			return usagef("trigger: --url %q is not an absolute http or https URL", *target)
		}
		to = *target
		if strings.Trim(u.Path, "/") == "" {
			to = intakeURL(strings.TrimRight(*target, "/"), sc, *tenant)
		}
	}

	now := time.Now().UTC()
	sent := providerHeaders(sc.Provider, fx.event, *tenant, now)
	var seed [32]byte
	crand.Read(seed[:])
	body, err := renderFixture(fx, newFixtureGen(now, seed, sc, sent.Get("X-Shopify-Shop-Domain")))
	if err != nil {
		return err
	}
	if err := senderHeaders(sent, sc, body); err != nil {
		return fmt.Errorf("trigger: %w", err)
	}
	req, err := signedRequest(ctx, sc, to, body, sent)
	if err != nil {
		return fmt.Errorf("trigger: %w", err)
	}
	shown := shownURL(req.URL)
	what := provider + " " + fx.event
	client := &http.Client{
		Timeout: 30 * time.Second,
		// A redirect would turn the POST into a GET: report it instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		// The error of Do names the URL, whose query may hold the
		// source's token: say it without.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		hint := ""
		if errors.Is(err, syscall.ECONNREFUSED) {
			hint = " (is 'hookgate serve' running there?)"
		}
		return fmt.Errorf("trigger: %s: POST %s: %v%s", what, shown, err, hint)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	fmt.Fprintf(std.Stdout, "%s -> %s: %s %s\n", what, shown, resp.Status, shorten(answer, resp.Header.Get("Content-Type"), 160))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("trigger: %s: the gateway answered %s%s", what, resp.Status, statusHint(resp.StatusCode, sc))
	}
	return nil
}

// triggerSource is the config's source called name, which must be of
// provider, or without a name its first source of provider.
func triggerSource(cfg config.Config, provider, name string) (config.Source, error) {
	var have []string
	for _, s := range cfg.Sources {
		have = append(have, s.Name+" ("+s.Provider+")")
	}
	sources := "none"
	if have != nil {
		sources = strings.Join(have, ", ")
	}
	if name != "" {
		src, ok := cfg.Source(name)
		switch {
		case !ok:
			return config.Source{}, usagef("trigger: the config has no source %q (it has %s)", name, sources)
		case src.Provider != provider:
			return config.Source{}, usagef("trigger: source %q is a %s source, not %s", name, src.Provider, provider)
		}
		return *src, nil
	}
	for _, s := range cfg.Sources {
		if s.Provider == provider {
			return s, nil
		}
	}
	return config.Source{}, usagef("trigger: the config has no %s source (its sources: %s)", provider, sources)
}

// senderHeaders adds to h what the provider sends besides the ids,
// types and signature that providerHeaders and the signer set: its
// User-Agent, GitHub's hook headers (naming the hook and repository of
// the fixtures) and legacy signatures, HubSpot's v1 signature beside v3.
// A receiver must not need them, but one that logs or checks them sees
// what the provider would send.
func senderHeaders(h http.Header, sc config.Source, body []byte) error {
	// The legacy signatures are left to a source without a secret,
	// whose signer says what is missing.
	secret := sc.Secret.Value()
	switch sc.Provider {
	case config.ProviderStripe:
		h.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
		h.Set("Content-Type", "application/json; charset=utf-8")
	case config.ProviderGitHub:
		h.Set("User-Agent", "GitHub-Hookshot/4f3c2a1")
		h.Set("X-GitHub-Hook-ID", "498912341")
		h.Set("X-GitHub-Hook-Installation-Target-Type", "repository")
		h.Set("X-GitHub-Hook-Installation-Target-ID", "812345678")
		if secret == "" {
			break
		}
		// GitHub still sends the SHA-1 signature beside the SHA-256 one.
		sha1, err := verify.NewHMAC(secret, verify.HMACConfig{Header: "X-Hub-Signature", Algorithm: "sha1", Encoding: "hex", Prefix: "sha1="})
		if err != nil {
			return err
		}
		r := &http.Request{Header: h}
		if err := sha1.Sign(r, body); err != nil {
			return err
		}
	case config.ProviderShopify:
		h.Set("User-Agent", "Shopify-Captain-Hook")
	case config.ProviderHubSpot:
		if secret == "" {
			break
		}
		// v1: hex SHA-256 of the secret and the body. The preset checks
		// the v3 signature, which decides when present.
		sum := sha256.Sum256(append([]byte(secret), body...))
		h.Set(verify.HeaderHubSpotSignature, hex.EncodeToString(sum[:]))
		h.Set(verify.HeaderHubSpotSignatureVersion, "v1")
	}
	return nil
}

// shownURL is u as trigger prints it: scheme, host and path, never the
// query (a token) or user information.
func shownURL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}

// shorten is an answer's body on one line: runs of white space made one
// space, escaped for the terminal, cut after max runes. Of an XML answer
// (Salesforce's SOAP Ack) it keeps what the elements say: "Ack=true".
func shorten(b []byte, contentType string, max int) string {
	s := string(b)
	if strings.Contains(contentType, "xml") {
		s = xmlText(b)
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return escape(s)
}

// statusHint says what an answer other than 2xx most likely means.
func statusHint(status int, sc config.Source) string {
	switch status {
	case http.StatusUnauthorized:
		if sc.Provider == config.ProviderSalesforce {
			return ": the gateway's source wants another organization id or token than the config gives"
		}
		return ": the signature did not verify; the gateway's source has another secret than the config gives"
	case http.StatusNotFound:
		return ": the gateway has no such source at that URL (is it running with this config?)"
	}
	return ""
}

// xmlText is "Name=text" for each element of an XML document that holds
// text, or the document as it is when it does not parse.
func xmlText(b []byte) string {
	var parts []string
	d := xml.NewDecoder(bytes.NewReader(b))
	var name string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return strings.Join(parts, " ")
		}
		if err != nil {
			return string(b)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name = t.Name.Local
		case xml.CharData:
			if text := strings.TrimSpace(string(t)); text != "" && name != "" {
				parts = append(parts, name+"="+text)
			}
		case xml.EndElement:
			name = ""
		}
	}
}

// listFixtures prints the events of every provider, or of provider.
func listFixtures(w io.Writer, provider string) error {
	if provider != "" {
		if _, err := findFixture(provider, ""); err != nil {
			return err
		}
	}
	t := newTable(w, "PROVIDER", "EVENT", "WHAT")
	seen := map[string]bool{}
	for _, f := range fixtures {
		if provider != "" && f.provider != provider {
			continue
		}
		event := f.event
		if !seen[f.provider] {
			event += " (default)"
			seen[f.provider] = true
		}
		t.row(f.provider, event, f.about)
	}
	return t.flush()
}

// renderFixture executes f's template with gen's values.
func renderFixture(f fixture, gen *fixtureGen) ([]byte, error) {
	name := path.Join("fixtures", f.provider, f.file)
	text, err := fixtureFiles.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("trigger: %w", err)
	}
	tmpl, err := template.New(f.file).Option("missingkey=error").Funcs(gen.funcs()).Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("trigger: fixture %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, nil); err != nil {
		return nil, fmt.Errorf("trigger: fixture %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// fixtureGen makes the values of one rendering of a fixture: a clock
// and ids. An id is fresh for each rendering and the same wherever one
// rendering names it again (the charge of a payment intent, the commit of
// a push), and all of them follow from the seed, so that a rendering is
// a function of (now, seed, source).
type fixtureGen struct {
	now  time.Time
	rnd  *rand.Rand
	memo map[string]string
	src  config.Source
	shop string
}

// newFixtureGen starts a rendering for src at now; shop is the Shopify
// shop domain the headers name.
func newFixtureGen(now time.Time, seed [32]byte, src config.Source, shop string) *fixtureGen {
	return &fixtureGen{now: now, rnd: rand.New(rand.NewChaCha8(seed)), memo: map[string]string{}, src: src, shop: shop}
}

const (
	base62    = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	hexDigits = "0123456789abcdef"
)

// once returns the value named key, made by mk on its first use.
func (g *fixtureGen) once(key string, mk func() string) string {
	if v, ok := g.memo[key]; ok {
		return v
	}
	v := mk()
	g.memo[key] = v
	return v
}

// chars is n random characters of alphabet; the first is never '0', so
// that a number keeps its digits.
func (g *fixtureGen) chars(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		if i == 0 {
			b[i] = alphabet[1+g.rnd.IntN(len(alphabet)-1)]
			continue
		}
		b[i] = alphabet[g.rnd.IntN(len(alphabet))]
	}
	return string(b)
}

// funcs are what the fixtures call:
//
//	now, ago "2m", later "48h"  the time (UTC), and that much before or after it
//	id "pi"                     a Stripe-style id: pi_ and 24 letters and digits
//	num "order" 13              a number of that many digits
//	hex "after" 40              that many hex digits (a commit)
//	uuid "form"                 a random UUID
//	sfid "006"                  an 18-character Salesforce id of that key prefix
//	org, org15                  the source's organization id, 18 and 15 characters
//	shop                        the shop domain of X-Shopify-Shop-Domain
//	upper                       strings.ToUpper
func (g *fixtureGen) funcs() template.FuncMap {
	return template.FuncMap{
		"now":   func() time.Time { return g.now },
		"ago":   func(d string) (time.Time, error) { return g.shift(d, -1) },
		"later": func(d string) (time.Time, error) { return g.shift(d, 1) },
		"id": func(prefix string) string {
			return g.once("id:"+prefix, func() string { return prefix + "_" + g.chars(base62, 24) })
		},
		"num": func(name string, digits int) string {
			return g.once("num:"+name, func() string { return g.chars("0123456789", digits) })
		},
		"hex": func(name string, n int) string {
			return g.once("hex:"+name, func() string { return g.chars(hexDigits, n) })
		},
		"uuid": func(name string) string {
			return g.once("uuid:"+name, func() string {
				s := g.chars(hexDigits, 32)
				return s[:8] + "-" + s[8:12] + "-4" + s[13:16] + "-a" + s[17:20] + "-" + s[20:]
			})
		},
		"sfid": func(prefix string) string {
			return g.once("sfid:"+prefix, func() string {
				id, _ := verify.SalesforceID18(prefix + "5e00000" + g.chars(base62, 5))
				return id
			})
		},
		"org": func() (string, error) {
			id, ok := verify.SalesforceID18(g.src.OrganizationID)
			if !ok {
				return "", fmt.Errorf("source %q: organization_id %q is not a Salesforce id", g.src.Name, g.src.OrganizationID)
			}
			return id, nil
		},
		"org15": func() string {
			id, _ := verify.SalesforceID18(g.src.OrganizationID)
			return id[:min(15, len(id))]
		},
		"shop":  func() string { return g.shop },
		"upper": strings.ToUpper,
	}
}

func (g *fixtureGen) shift(d string, sign time.Duration) (time.Time, error) {
	v, err := time.ParseDuration(d)
	if err != nil {
		return time.Time{}, err
	}
	return g.now.Add(sign * v), nil
}
