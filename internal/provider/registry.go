package provider

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// Sentinel errors a derived selector returns, which source's request errors
// wrap.
var (
	// ErrMissing reports that a selected value is absent or empty.
	ErrMissing = errors.New("missing or empty")
	// ErrMalformed reports a value or body that is not in the provider's
	// format.
	ErrMalformed = errors.New("malformed body")
)

// Provider is one sender hookgate has a preset for.
type Provider struct {
	// Name is what a source's provider: field says.
	Name string
	// rank orders providers in lists and messages: the order the
	// documentation introduces them in.
	rank int

	// Secret is whether a source needs a signing secret.
	Secret Need
	// SecretNote says why a source of a provider whose Secret is
	// [Refused] has none: what it checks instead.
	SecretNote string
	// Token reports that a source may set a ?token= URL parameter.
	Token bool
	// OrganizationID, when set, makes an organization id required and
	// checks it; nil: a source sets none.
	OrganizationID func(id string) error
	// Signature, when set, makes a signature block required and checks
	// it, with fields relative to "signature"; nil: a source sets none.
	Signature func(sig Signature) []Problem

	// NewScheme builds the verifier of one secret (the empty string for
	// a source without one).
	NewScheme func(c Credentials, secret string, opts ...verify.Option) (verify.Scheme, error)
	// SignedHeaders are the headers besides the body that the
	// signature covers, so that reading them keeps a replayed request
	// from becoming a new event (lower case).
	SignedHeaders []string
	// Preset is where a delivery's event id, scope, tenant and entity
	// fields are.
	Preset Preset

	// Answer writes the response the sender needs instead of the JSON
	// one: status is intake's, message its error text (empty for 2xx).
	// nil: the JSON response.
	Answer func(w http.ResponseWriter, status int, message string)
	// Warn is what the server logs about a source of the provider that
	// works but is exposed; "" when nothing.
	Warn func(c Credentials) string
	// Unauthorized says what a 401 for a request signed as the
	// configuration says most likely means; "" for the usual: another
	// secret.
	Unauthorized string
	// Notes are what the console says about the preset.
	Notes Notes

	// ContentType is the Content-Type of the provider's deliveries;
	// "" is application/json.
	ContentType string
	// Headers are the headers, other than the signature's, that the
	// provider sends with every delivery and that its preset reads: the
	// delivery's id, the event's type (event, or the provider's
	// default), the tenant. Each id is fresh. nil: none.
	Headers func(event, tenant string, now time.Time) http.Header
	// SenderHeaders adds what the provider sends besides the headers of
	// Headers and its signature (User-Agent, legacy signatures), given
	// the source's first secret ("" when it has none). nil: nothing.
	SenderHeaders func(h http.Header, secret string, body []byte) error
	// Examples are the provider's example events, its typical one first,
	// whose templates are internal/trigger's fixtures/{Name}/{File}.
	Examples []Example

	// Reconcile builds the provider's reconciler, which lists what the
	// provider says it sent; nil for a provider that lists nothing.
	Reconcile func(c ReconcileConfig) (Reconciler, error)
	// ReconcileCredential is the field of a source's reconcile block
	// that holds the reconciler's API credential: "api_key" or "token"
	// ("" is "token").
	ReconcileCredential string
	// ReconcileFields are the fields of the reconcile block that only
	// some providers read (FieldTypes, FieldHook, …) which this one
	// reads; another set is an error.
	ReconcileFields []string
	// ReconcileCheck checks those fields, each Problem's Field relative
	// to the reconcile block; nil checks nothing.
	ReconcileCheck func(c ReconcileConfig) []Problem
	// ReconcileByHeaders reports a reconciler whose listing carries each
	// delivery's headers but not its body (GitHub's): a source of it can
	// be reconciled only when its key, scope and tenant read headers or
	// constants.
	ReconcileByHeaders bool
	// FinalStates are the entity states after which the provider sends
	// nothing more; set, its reconciler asks about the source's other
	// entities (ListQuery.Open) rather than listing events.
	FinalStates []string
}

// Need is whether a source of a provider needs a signing secret.
type Need int

const (
	// Required: every source sets a secret.
	Required Need = iota
	// Refused: the provider signs nothing; a secret is an error.
	Refused
	// SecretOrToken: a secret, a ?token= or both.
	SecretOrToken
)

// Credentials are what a source's configuration gives its verifier besides
// its secrets.
type Credentials struct {
	// Token is the ?token= URL parameter; "" for none.
	Token string
	// OrganizationID is the organization that must have sent a message.
	OrganizationID string
	// Signature describes a generic signature header.
	Signature Signature
}

// Signature describes a generic HMAC signature header, as a source
// configures it.
type Signature struct {
	Header, Algorithm, Encoding, Prefix string
}

// Problem is one invalid field of a source's configuration.
type Problem struct {
	// Field is relative to the source ("signature.header").
	Field string
	// Message says what is wrong, naming the value.
	Message string
}

// Notes are what the console says about a preset, for a source that does
// not override it.
type Notes struct {
	// Signed is what the signature covers.
	Signed string
	// Key and Tenant are what the preset's event id and tenant read.
	Key, Tenant string
	// Recovered says what a reconciliation run's recovered count means,
	// where not [DefaultRecovered].
	Recovered string
	// Failed says what its failed count means, where not
	// [DefaultFailed].
	Failed string
}

// What a reconciliation run's counts mean, for a provider whose listing
// carries its events.
const (
	DefaultRecovered = "no webhook came: accepted, via reconcile"
	DefaultFailed    = "could not be keyed"
)

// RecoveredNote says what a reconciliation run's recovered count means
// for the provider called name.
func RecoveredNote(name string) string {
	if p, ok := byName[name]; ok && p.Notes.Recovered != "" {
		return p.Notes.Recovered
	}
	return DefaultRecovered
}

// FailedNote says what a reconciliation run's failed count means for the
// provider called name.
func FailedNote(name string) string {
	if p, ok := byName[name]; ok && p.Notes.Failed != "" {
		return p.Notes.Failed
	}
	return DefaultFailed
}

// Example is one example event of a provider.
type Example struct {
	// Event is the provider's name for it: the type in the body, the
	// event header, the sObject of an outbound message.
	Event string
	// File is its template under the provider's fixtures directory.
	File string
	// About says what it is.
	About string
}

// byName holds every provider; all lists them in rank order.
var (
	byName = map[string]*Provider{}
	all    []*Provider
)

// register adds p to the registry; each provider's file calls it from its
// init function.
func register(p *Provider) {
	if p.Name == "" || byName[p.Name] != nil {
		panic(fmt.Sprintf("provider: %q registered twice or without a name", p.Name))
	}
	byName[p.Name] = p
	i, _ := slices.BinarySearchFunc(all, p, func(a, b *Provider) int { return cmp.Compare(a.rank, b.rank) })
	all = slices.Insert(all, i, p)
}

// Lookup returns the provider called name.
func Lookup(name string) (*Provider, bool) {
	p, ok := byName[name]
	return p, ok
}

// All returns every provider, in the order documentation and messages
// name them.
func All() []*Provider {
	return slices.Clone(all)
}

// Names returns every provider's name, in the order of [All].
func Names() []string {
	return Where(func(*Provider) bool { return true })
}

// Where returns the names of the providers for which ok holds, in the order
// of [All]: the providers a field is for, for messages.
func Where(ok func(*Provider) bool) []string {
	var out []string
	for _, p := range all {
		if ok(p) {
			out = append(out, p.Name)
		}
	}
	return out
}

// ContentTypeOf is the Content-Type of p's deliveries.
func (p *Provider) ContentTypeOf() string {
	return cmp.Or(p.ContentType, "application/json")
}

// SignsHeader reports whether p's signature covers the header called name.
func (p *Provider) SignsHeader(name string) bool {
	return slices.Contains(p.SignedHeaders, strings.ToLower(name))
}

// newUUID returns a random (version 4) UUID, the form of the delivery ids
// of several providers.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
