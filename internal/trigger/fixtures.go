package trigger

import (
	"bytes"
	"embed"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/verify"
)

// fixtureFiles holds the bodies, one text/template per event under
// fixtures/PROVIDER/ (see gen.funcs for what they call).
//
//go:embed fixtures
var fixtureFiles embed.FS

// Fixture is one example event of a provider.
type Fixture struct {
	// Provider is the preset that reads it.
	Provider string
	// Event is the provider's name for it: the type in the body
	// (stripe, standard, shippo), X-GitHub-Event, X-Shopify-Topic,
	// HubSpot's subscriptionType, the sObject of a Salesforce outbound
	// message.
	Event string
	// File is its template under fixtures/{Provider}/.
	File string
	// About says what it is.
	About string
}

// Fixtures are the example events; each provider's first is its default.
// hmac has none: its events are keyed by the selectors of the config,
// which no fixture can know.
var Fixtures = []Fixture{
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

// Providers are the providers that have fixtures, in the order of
// Fixtures.
func Providers() []string {
	var ps []string
	for _, f := range Fixtures {
		if !slices.Contains(ps, f.Provider) {
			ps = append(ps, f.Provider)
		}
	}
	return ps
}

// Of returns provider's fixtures, its default first; none for a provider
// without any.
func Of(provider string) []Fixture {
	var out []Fixture
	for _, f := range Fixtures {
		if f.Provider == provider {
			out = append(out, f)
		}
	}
	return out
}

// Find returns provider's fixture named event, or its default when event
// is empty. Event names are matched without regard to case.
func Find(provider, event string) (Fixture, bool) {
	for _, f := range Of(provider) {
		if event == "" || strings.EqualFold(f.Event, event) {
			return f, true
		}
	}
	return Fixture{}, false
}

// render executes f's template with g's values.
func render(f Fixture, g *gen) ([]byte, error) {
	name := path.Join("fixtures", f.Provider, f.File)
	text, err := fixtureFiles.ReadFile(name)
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New(f.File).Option("missingkey=error").Funcs(g.funcs()).Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("fixture %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, nil); err != nil {
		return nil, fmt.Errorf("fixture %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// gen makes the values of one rendering of a fixture: a clock and ids. An
// id is fresh for each rendering and the same wherever one rendering
// names it again (the charge of a payment intent, the commit of a push),
// and all of them follow from the seed, so that a rendering is a function
// of (now, seed, source).
type gen struct {
	now  time.Time
	rnd  *rand.Rand
	memo map[string]string
	src  config.Source
	shop string
}

// newGen starts a rendering for src at now; shop is the Shopify shop
// domain the headers name.
func newGen(now time.Time, seed [32]byte, src config.Source, shop string) *gen {
	return &gen{now: now, rnd: rand.New(rand.NewChaCha8(seed)), memo: map[string]string{}, src: src, shop: shop}
}

const (
	base62    = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	hexDigits = "0123456789abcdef"
)

// once returns the value named key, made by mk on its first use.
func (g *gen) once(key string, mk func() string) string {
	if v, ok := g.memo[key]; ok {
		return v
	}
	v := mk()
	g.memo[key] = v
	return v
}

// chars is n random characters of alphabet; the first is never '0', so
// that a number keeps its digits.
func (g *gen) chars(alphabet string, n int) string {
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
func (g *gen) funcs() template.FuncMap {
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

func (g *gen) shift(d string, sign time.Duration) (time.Time, error) {
	v, err := time.ParseDuration(d)
	if err != nil {
		return time.Time{}, err
	}
	return g.now.Add(sign * v), nil
}
