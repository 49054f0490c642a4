package source

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/verify"
)

// MaxBatch is the most events one request may carry (HubSpot's and
// Salesforce's own limit).
const MaxBatch = 100

// MaxPathTenant is the longest tenant, in bytes, a URL path may carry.
const MaxPathTenant = 128

// maxJSONDepth bounds the nesting of a JSON body, so that validating a
// hostile body cannot recurse without end.
const maxJSONDepth = 512

// Source is one configured sender, ready to serve requests. It is safe for
// concurrent use.
type Source struct {
	// Name is the source's name: its URL segment and its keys' provider part.
	Name string
	// Provider is the preset the source was built from.
	Provider string
	// Window is how long the source's dedupe keys are kept.
	Window time.Duration
	// TenantFromPath reports that the tenant is the URL's
	// /in/{source}/{tenant} segment; only such a source accepts one.
	TenantFromPath bool
	// ReplayGuard reports that a request whose signed content the source
	// already accepted is a duplicate, whatever its unsigned parts say:
	// [Source.Digest] names the signed content.
	ReplayGuard bool
	// Secrets is how many secrets the source accepts (1 unless its
	// configured secret is a list); [Source.Authenticate] says which one
	// verified a request by its index, 0 to Secrets-1.
	Secrets int

	verifier  *verify.Any
	format    format
	key       []selector
	scope     [2]selector
	tenant    selector
	entity    entitySels
	headers   []string   // canonical names copied into Event.Headers
	xmlWant   *xmlWant   // what of a Salesforce message the selectors read
	jsonPaths []jsonPath // what of a JSON event the selectors read
}

// Event is one event of a request, keyed.
type Event struct {
	// Key identifies the event for deduplication.
	Key dedupe.Key
	// Hash is Key.Hash().
	Hash dedupe.Hash
	// Tenant is Key.Tenant.
	Tenant string
	// EventID is Key.EventID: the event id parts, escaped and joined.
	EventID string
	// Entity is what the event is about; zero where neither the preset nor
	// the configuration says.
	Entity Entity
	// Payload is the event's own bytes: the whole body for single-event
	// providers, the array element for HubSpot, the <Notification> element
	// for Salesforce (namespace declarations of its ancestors not included).
	Payload []byte
	// Headers holds the request headers later stages need, under canonical
	// names: the provider's id, topic and timestamp headers, every header a
	// selector reads, and Content-Type.
	Headers map[string]string
}

// Entity is the object an event is about and the version that orders its
// events.
type Entity struct {
	// Type is the entity's type ("charge", "deal.dealstage", "Opportunity").
	Type string
	// ID is the entity's id within its type.
	ID string
	// State is the entity's state after the event; transitions fire on its
	// changes.
	State string
	// Version is the ordering value as the provider wrote it.
	Version string
	// Order is Version made comparable: an integer as it is, an RFC 3339 time
	// as Unix nanoseconds, another number truncated to an integer; 0 when
	// Version is empty or none of these.
	Order int64
}

// New builds the source cfg describes: its verifier (opts, such as a clock,
// go to it) and the preset's selectors with cfg's overrides. A source
// without its own window uses defaults.Window.
func New(cfg config.Source, defaults config.Dedupe, opts ...verify.Option) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("source %q: %w", cfg.Name, err)
	}
	p := presets()[cfg.Provider]
	s := &Source{
		Name:     cfg.Name,
		Provider: cfg.Provider,
		Window:   time.Duration(cfg.Window),
		format:   p.format,
		key:      p.key,
		scope:    p.scope,
		tenant:   p.tenant,
		entity:   p.entity,
	}
	if s.Window == 0 {
		s.Window = time.Duration(defaults.Window)
	}
	if s.Window == 0 {
		s.Window = time.Duration(config.DefaultWindow)
	}
	if err := s.override(cfg); err != nil {
		return nil, fmt.Errorf("source %q: %w", cfg.Name, err)
	}

	var err error
	if s.verifier, err = newVerifier(cfg, opts); err != nil {
		return nil, fmt.Errorf("source %q: %w", cfg.Name, err)
	}
	s.Secrets = s.verifier.Len()
	guard := cfg.ReplayGuard
	if guard == "" {
		guard = cfg.DefaultReplayGuard()
	}
	s.ReplayGuard = guard == config.ReplayGuardOn

	if s.format == formatSOAP {
		s.xmlWant = newXMLWant(s.selectors())
	}
	s.jsonPaths = newJSONPaths(s.selectors())

	names := map[string]bool{"Content-Type": true}
	for _, h := range p.headers {
		names[h] = true
	}
	for _, sel := range s.selectors() {
		if f, ok := sel.(fieldSel); ok && f.sel.Kind == config.SelectHeader {
			names[textproto.CanonicalMIMEHeaderKey(f.sel.Name)] = true
		}
		if s.format == formatRaw && sel.kind() == config.SelectJSON {
			s.format = formatJSON
		}
	}
	for h := range names {
		s.headers = append(s.headers, h)
	}
	return s, nil
}

// override replaces the preset's selectors with the configured ones.
func (s *Source) override(cfg config.Source) error {
	var errs []error
	set := func(dst *selector, sel string) {
		if sel == "" {
			return
		}
		f, err := newFieldSel(sel)
		if err != nil {
			errs = append(errs, err)
			return
		}
		*dst = f
	}
	if len(cfg.Key) > 0 {
		s.key = make([]selector, len(cfg.Key))
		for i, k := range cfg.Key {
			set(&s.key[i], k)
		}
	}
	if len(cfg.Scope) > 0 {
		s.scope = [2]selector{}
		for i, k := range cfg.Scope {
			set(&s.scope[i], k)
		}
	}
	set(&s.tenant, cfg.Tenant)
	set(&s.entity.typ, cfg.Entity.Type)
	set(&s.entity.id, cfg.Entity.ID)
	set(&s.entity.version, cfg.Entity.Version)
	set(&s.entity.state, cfg.Entity.State)
	if s.tenant != nil && s.tenant.kind() == config.SelectPath {
		s.TenantFromPath = true
	}
	return errors.Join(errs...)
}

// selectors returns every selector the source evaluates.
func (s *Source) selectors() []selector {
	var all []selector
	for _, sel := range append([]selector{s.scope[0], s.scope[1], s.tenant,
		s.entity.typ, s.entity.id, s.entity.version, s.entity.state}, s.key...) {
		if sel != nil {
			all = append(all, sel)
		}
	}
	return all
}

// newVerifier builds the provider's verifier: one per secret of the
// configured list, any of which may verify a request.
func newVerifier(cfg config.Source, opts []verify.Option) (*verify.Any, error) {
	if cfg.PublicURL != "" {
		opts = append([]verify.Option{verify.WithPublicURL(cfg.PublicURL)}, opts...)
	}
	var schemes []verify.Scheme
	for _, secret := range cfg.Secret.All() {
		v, err := newScheme(cfg, secret.Value(), opts)
		if err != nil {
			return nil, err
		}
		schemes = append(schemes, v)
	}
	return verify.NewAny(schemes...)
}

// newScheme builds the provider's verifier with one secret.
func newScheme(cfg config.Source, secret string, opts []verify.Option) (verify.Scheme, error) {
	p, ok := provider.Lookup(cfg.Provider)
	if !ok {
		return nil, fmt.Errorf("%w: unknown provider %q", config.ErrInvalid, cfg.Provider)
	}
	return p.NewScheme(cfg.Credentials(), secret, opts...)
}

// errNoVerifier is what Authenticate returns for a Source not built by New.
var errNoVerifier = errors.New("source: no verifier (not built by source.New)")

// Authenticate checks the request's signature, token or organization, and
// returns the index of the secret that verified it (0 for a source of one
// secret). Any error means 401; a Source not built by [New] rejects
// everything.
func (s *Source) Authenticate(r *http.Request, body []byte) (secret int, err error) {
	if s == nil || s.verifier == nil {
		return -1, errNoVerifier
	}
	secret, err = s.verifier.Match(r, body)
	if err != nil {
		return -1, fmt.Errorf("source %q: %w", s.Name, err)
	}
	return secret, nil
}

// Digest returns the replay guard's key for an authenticated request: a
// hash of the source's name and of what the provider's signature covers
// (verify.Digester), so that two sources never share one. ok is false when
// the source's replay guard is off.
func (s *Source) Digest(r *http.Request, body []byte) (d dedupe.Hash, ok bool) {
	if s == nil || s.verifier == nil || !s.ReplayGuard {
		return d, false
	}
	signed := s.verifier.SignedDigest(r, body)
	h := sha256.New()
	h.Write([]byte("hookgate replay guard\x00"))
	var buf [binary.MaxVarintLen64]byte
	h.Write(buf[:binary.PutUvarint(buf[:], uint64(len(s.Name)))])
	h.Write([]byte(s.Name))
	h.Write(signed[:])
	var sum [sha256.Size]byte
	copy(d[:], h.Sum(sum[:0]))
	return d, true
}

// Signer returns the provider's signer, which makes requests that
// Authenticate accepts (for `hookgate sign` and tests).
func (s *Source) Signer() verify.Signer {
	return s.verifier
}

// NewSigner returns the signer of cfg's provider alone, for signing test
// deliveries: unlike New it needs only what the signature needs (the
// secret, token, organization or signature header), not the key selectors.
func NewSigner(cfg config.Source, opts ...verify.Option) (verify.Signer, error) {
	v, err := newVerifier(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("source %q: %w", cfg.Name, err)
	}
	return v, nil
}

// Events splits the body into events and keys each one. pathTenant is the
// URL's tenant segment ("" when absent). Every error is a [*RequestError];
// on error no events are returned.
func (s *Source) Events(r *http.Request, body []byte, pathTenant string) ([]Event, error) {
	if pathTenant != "" {
		err := checkPathTenant(pathTenant)
		if !s.TenantFromPath {
			err = ErrPathTenant
		}
		if err != nil {
			return nil, &RequestError{Index: -1, Part: "tenant", Selector: "path", Err: err}
		}
	}
	in := &input{r: r, pathTenant: pathTenant}
	headers := s.requestHeaders(r)

	switch s.format {
	case formatRaw:
		return s.single(in, body, headers)
	case formatJSON:
		if err := checkJSON(body); err != nil {
			return nil, err
		}
		in.json = gjson.ParseBytes(body)
		return s.single(in, body, headers)
	case formatJSONArray:
		if err := checkJSON(body); err != nil {
			return nil, err
		}
		root := gjson.ParseBytes(body)
		if !root.IsArray() {
			return nil, bodyError("%w: want a JSON array of events", ErrMalformed)
		}
		var elems []gjson.Result
		root.ForEach(func(_, v gjson.Result) bool {
			elems = append(elems, v)
			return len(elems) <= MaxBatch
		})
		if len(elems) == 0 || len(elems) > MaxBatch {
			return nil, bodyError("%w: want 1 to %d events", ErrBatchSize, MaxBatch)
		}
		events := make([]Event, len(elems))
		for i, el := range elems {
			if !el.IsObject() {
				return nil, &RequestError{Index: i, Part: "body", Err: fmt.Errorf("%w: want a JSON object", ErrMalformed)}
			}
			in.json = el
			var err error
			if events[i], err = s.event(in, i, []byte(el.Raw), headers); err != nil {
				return nil, err
			}
		}
		return events, nil
	default: // formatSOAP
		root, err := parseXML(body, s.xmlWant)
		if err != nil {
			return nil, &RequestError{Index: -1, Part: "body", Err: err}
		}
		notifs, err := notifications(root)
		if err != nil {
			return nil, &RequestError{Index: -1, Part: "body", Err: err}
		}
		if len(notifs) == 0 || len(notifs) > MaxBatch {
			return nil, bodyError("%w: want 1 to %d Notification elements", ErrBatchSize, MaxBatch)
		}
		in.xmlRoot = root
		events := make([]Event, len(notifs))
		for i, n := range notifs {
			in.xmlEvent = n
			if events[i], err = s.event(in, i, body[n.start:n.end], headers); err != nil {
				return nil, err
			}
		}
		return events, nil
	}
}

// HeaderKey keys a delivery known by its headers alone, as a provider's
// listing of deliveries describes them (GitHub's: the delivery's GUID and
// event): what Events would give a request with these headers, when the
// key, scope and tenant read nothing else. A selector of them that reads
// the body or the path finds nothing, and the error names it.
func (s *Source) HeaderKey(h http.Header) (dedupe.Key, dedupe.Hash, error) {
	r := &http.Request{Header: h}
	ev, err := s.event(&input{r: r}, 0, nil, nil)
	if err != nil {
		return dedupe.Key{}, dedupe.Hash{}, err
	}
	return ev.Key, ev.Hash, nil
}

// single keys a body that is one event.
func (s *Source) single(in *input, body []byte, headers map[string]string) ([]Event, error) {
	ev, err := s.event(in, 0, body, headers)
	if err != nil {
		return nil, err
	}
	return []Event{ev}, nil
}

// event keys the event in reads.
func (s *Source) event(in *input, i int, payload []byte, headers map[string]string) (Event, error) {
	if dup := duplicateName(in.json.Raw, s.jsonPaths); dup != nil {
		sel := config.Selector{Kind: config.SelectJSON, Path: dup}
		return Event{}, &RequestError{Index: i, Part: "body", Selector: sel.String(), Err: ErrDuplicateName}
	}
	k := dedupe.Key{Provider: s.Name}
	if s.tenant != nil {
		v, err := s.tenant.value(in)
		if err != nil {
			return Event{}, &RequestError{Index: i, Part: "tenant", Selector: s.tenant.String(), Err: err}
		}
		k.Tenant = v
	}
	k.ObjectType = optional(s.scope[0], in)
	k.Action = optional(s.scope[1], in)
	if len(s.key) == 0 {
		return Event{}, &RequestError{Index: i, Part: "event id", Err: fmt.Errorf("%w: no event id selectors", ErrMissing)}
	}
	parts := make([]string, len(s.key))
	for j, sel := range s.key {
		v, err := sel.value(in)
		if err != nil {
			return Event{}, &RequestError{Index: i, Part: "event id", Selector: sel.String(), Err: err}
		}
		parts[j] = v
	}
	k.EventID = joinID(parts...)

	ent := Entity{
		Type:    optional(s.entity.typ, in),
		ID:      optional(s.entity.id, in),
		State:   optional(s.entity.state, in),
		Version: optional(s.entity.version, in),
	}
	ent.Order = order(ent.Version)
	return Event{
		Key:     k,
		Hash:    k.Hash(),
		Tenant:  k.Tenant,
		EventID: k.EventID,
		Entity:  ent,
		Payload: payload,
		Headers: maps.Clone(headers),
	}, nil
}

// requestHeaders copies the headers events carry.
func (s *Source) requestHeaders(r *http.Request) map[string]string {
	h := make(map[string]string, len(s.headers))
	if r == nil {
		return h
	}
	for _, name := range s.headers {
		if v := r.Header.Get(name); v != "" {
			h[name] = v
		}
	}
	return h
}

// joinID joins event id parts into one id. Each part's '\' and '|' are
// escaped with '\' and the parts are joined with '|', so different lists of
// parts always give different ids.
func joinID(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('|')
		}
		for j := 0; j < len(p); j++ {
			if p[j] == '\\' || p[j] == '|' {
				b.WriteByte('\\')
			}
			b.WriteByte(p[j])
		}
	}
	return b.String()
}

// order makes a version comparable; see [Entity.Order].
func order(v string) int64 {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		// UnixNano is defined for years 1678 to 2262 only.
		if y := t.Year(); y > 1678 && y < 2262 {
			return t.UnixNano()
		}
		return 0
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f > math.MinInt64 && f < math.MaxInt64 {
		return int64(f)
	}
	return 0
}

// checkPathTenant accepts 1 to MaxPathTenant bytes of printable UTF-8. The
// reason it gives names the offending character by code point, never by
// the character itself.
func checkPathTenant(t string) error {
	if len(t) > MaxPathTenant {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrBadTenant, len(t), MaxPathTenant)
	}
	if !utf8.ValidString(t) {
		return fmt.Errorf("%w: not valid UTF-8", ErrBadTenant)
	}
	for i, r := range t {
		switch {
		case unicode.IsControl(r):
			return fmt.Errorf("%w: control character %U at byte %d", ErrBadTenant, r, i)
		case !unicode.IsPrint(r):
			return fmt.Errorf("%w: unprintable character %U at byte %d", ErrBadTenant, r, i)
		}
	}
	return nil
}

// checkJSON accepts a body that is valid JSON in UTF-8 (RFC 8259 allows no
// other encoding, and gjson does not check it) nested at most maxJSONDepth
// deep.
func checkJSON(body []byte) error {
	if !utf8.Valid(body) {
		return bodyError("%w: JSON that is not valid UTF-8", ErrMalformed)
	}
	if !shallowJSON(body) {
		return bodyError("%w: JSON nested deeper than %d levels", ErrMalformed, maxJSONDepth)
	}
	if !gjson.ValidBytes(body) {
		return bodyError("%w: not valid JSON", ErrMalformed)
	}
	return nil
}

// shallowJSON reports whether the brackets outside strings nest at most
// maxJSONDepth deep. It does not validate; gjson.ValidBytes does that.
func shallowJSON(body []byte) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range body {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > maxJSONDepth {
				return false
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return true
}
