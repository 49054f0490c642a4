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
	"github.com/hookgate/hookgate/internal/provider"
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

// Fixtures are the example events of every provider (internal/provider's
// Examples), in the registry's order; each provider's first is its
// default. A provider without examples (hmac: its events are keyed by the
// selectors of the config, which no fixture can know) has none.
var Fixtures = fixtures()

func fixtures() []Fixture {
	var out []Fixture
	for _, p := range provider.All() {
		for _, e := range p.Examples {
			out = append(out, Fixture{Provider: p.Name, Event: e.Event, File: e.File, About: e.About})
		}
	}
	return out
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

// newGen starts a rendering for src at now; shop is the tenant the
// headers name (Shopify's shop domain).
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
//	shop                        the tenant of the provider's tenant header (Shopify's shop domain)
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
