package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hookgate/hookgate/internal/provider"
)

// MinTokenLength is the fewest characters an admin.token or a
// metrics.token may have: `openssl rand -hex 32` gives 64.
const MinTokenLength = 32

// Sentinel errors. Every [*FieldError] also matches [ErrInvalid].
var (
	// ErrInvalid marks any configuration that cannot be used.
	ErrInvalid = errors.New("invalid configuration")
	// ErrSecret marks a secret reference that is malformed or cannot be read.
	ErrSecret = errors.New("secret")
	// ErrSelector marks a malformed selector.
	ErrSelector = errors.New("bad selector")
)

// FieldError is one invalid field.
type FieldError struct {
	// Field is the field's path, such as "sources[2].provider".
	Field string
	// Line is the field's line in the YAML, 0 when unknown.
	Line int
	// Err says what is wrong, naming the value (except for secrets).
	Err error
}

// Error returns "line N: field: problem", without the line when unknown
// and without the field for the whole document.
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying problem.
func (e *FieldError) Unwrap() error { return e.Err }

// Is reports that every field error is an [ErrInvalid].
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// Validate checks the configuration as it stands (after defaults). The error
// joins one [*FieldError] per problem.
func (c Config) Validate() error {
	return joinFieldErrors(c.check(), nil)
}

// Warnings lists what the configuration allows but is probably not
// meant, in the user's words, for check-config and serve to print before
// they go on.
func (c Config) Warnings() []string {
	var w []string
	if len(c.Sources) == 0 {
		w = append(w, "no sources: hookgate accepts nothing until one is configured (see docs/configuration.md)")
	}
	return w
}

// Validate checks one source on its own; field paths are relative to it
// ("provider", "key[0]"). It does not read secrets; it does check that the
// schema file exists.
func (s Source) Validate() error {
	return joinFieldErrors(s.check(), nil)
}

// joinFieldErrors joins errs, filling in lines from the YAML when known.
func joinFieldErrors(errs []*FieldError, lines map[string]int) error {
	if len(errs) == 0 {
		return nil
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		if e.Line == 0 {
			e.Line = lineOf(e.Field, lines)
		}
		all[i] = e
	}
	return errors.Join(all...)
}

// lineOf returns the line of field, or of its nearest ancestor when the field
// itself was left out of the YAML.
func lineOf(field string, lines map[string]int) int {
	for field != "" {
		if n, ok := lines[field]; ok {
			return n
		}
		field = field[:max(strings.LastIndexAny(field, ".["), 0)]
	}
	return 0
}

func (c Config) check() []*FieldError {
	var errs []*FieldError
	add := func(field string, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Err: fmt.Errorf(format, args...)})
	}
	if err := checkListen(c.Listen); err != nil {
		add("listen", "%q: %w", c.Listen, err)
	}
	if c.Admin.Listen != "" {
		if err := checkListen(c.Admin.Listen); err != nil {
			add("admin.listen", "%q: %w", c.Admin.Listen, err)
		} else if sameAddress(c.Admin.Listen, c.Listen) {
			add("admin.listen", "%q: the same address as listen; the admin listener needs an address of its own", c.Admin.Listen)
		}
	}
	switch {
	case c.PostgresURL() != "":
		if err := checkPostgresURL(c.Database); err != nil {
			add("database", "%v", err)
		}
	case c.SQLitePath() == "":
		add("database", "%q: want sqlite:PATH or postgres://…", c.Database)
	}
	switch {
	case c.DatabaseSession == "":
	case c.PostgresURL() == "":
		add("database_session", "set, but database is not PostgreSQL: a session is only needed beside a postgres:// database")
	case !isPostgresURL(c.DatabaseSession):
		add("database_session", "want a postgres:// URL that reaches the server directly, bypassing any pooler")
	default:
		if err := checkPostgresURL(c.DatabaseSession); err != nil {
			add("database_session", "%v", err)
		}
	}
	for _, t := range []struct {
		field string
		token Secret
	}{{"admin.token", c.Admin.Token}, {"metrics.token", c.Metrics.Token}} {
		if n := utf8.RuneCountInString(t.token.Value()); n > 0 && n < MinTokenLength {
			add(t.field, "%d characters, too short to withstand guessing: use at least %d (make one with `openssl rand -hex 32`)", n, MinTokenLength)
		}
	}
	if c.MaxBody <= 0 {
		add("max_body", "%s: must be positive", c.MaxBody)
	}
	if c.Limits.MaxConnections < 1 {
		add("limits.max_connections", "%d: want at least 1", c.Limits.MaxConnections)
	}
	if c.Limits.MinBodyRate < 0 {
		add("limits.min_body_rate", "%s: want a rate of at least 1 byte a second, or 0 for none", c.Limits.MinBodyRate)
	}
	if c.Limits.BodyGrace < 0 {
		add("limits.body_grace", "%s: want 0 or more", c.Limits.BodyGrace)
	}
	if c.Limits.MaxPendingBody < c.MaxBody {
		add("limits.max_pending_body", "%s: want at least max_body (%s), or no request of that size is ever read", c.Limits.MaxPendingBody, c.MaxBody)
	}
	if c.Dedupe.Window <= 0 {
		add("dedupe.window", "%s: must be positive", c.Dedupe.Window)
	}
	if c.Dedupe.StoreTimeout <= 0 {
		add("dedupe.store_timeout", "%s: must be positive", c.Dedupe.StoreTimeout)
	}
	switch c.Dedupe.OnStoreError {
	case OnStoreErrorReject:
	case OnStoreErrorSpool:
		if strings.TrimSpace(c.Dedupe.Spool) == "" {
			add("dedupe.spool", "required with on_store_error: spool: a file on the node's local disk, e.g. /var/lib/hookgate/spool.db")
		}
	default:
		add("dedupe.on_store_error", "%q: want reject or spool", c.Dedupe.OnStoreError)
	}
	if f := c.Dedupe.Front; f != "" {
		if u, err := url.Parse(f); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			add("dedupe.front", "want a Redis URL, redis://host:port/db or rediss://... (the value is not shown: it may hold a password)")
		}
	}
	if strings.ContainsAny(c.Dedupe.FrontPrefix, "{}") {
		add("dedupe.front_prefix", "%q: may not contain '{' or '}' (the front keeps its keys in one Redis Cluster slot with them)", c.Dedupe.FrontPrefix)
	}
	c.Alerts.check(add)
	if c.Workers < 1 {
		add("workers", "%d: want at least 1", c.Workers)
	}
	if c.Batch < 1 || c.Batch > MaxBatch {
		add("batch", "%d: want 1 to %d", c.Batch, MaxBatch)
	}
	if c.Retention <= 0 {
		add("retention", "%s: must be positive", c.Retention)
	}
	if c.SweepEvery <= 0 {
		add("sweep_every", "%s: must be positive", c.SweepEvery)
	}
	if c.Lease < MinLease {
		add("lease", "%s: want at least %s", c.Lease, MinLease)
	} else {
		errs = append(errs, c.checkLease()...)
	}
	return append(errs, checkNamed("sources", c.Sources, Source.name, Source.check)...)
}

// checkLease reports each destination whose timeout does not fit in the
// lease with room to record the attempt: deliveries are leased one by one,
// and a lease that runs out mid-attempt hands the delivery to another
// worker while the first may still succeed.
func (c Config) checkLease() []*FieldError {
	var errs []*FieldError
	for i, s := range c.Sources {
		for j, d := range s.Destinations {
			if need := d.Timeout + LeaseMargin; c.Lease < need {
				errs = append(errs, &FieldError{Field: "lease", Err: fmt.Errorf(
					"%s is shorter than sources[%d].destinations[%d].timeout (%s) + %s: raise lease to at least %s or lower that timeout",
					c.Lease, i, j, d.Timeout, LeaseMargin, need)})
			}
		}
	}
	return errs
}

// checkNamed checks each element of a list of named things (sources, a
// source's destinations), with field paths under list[i], and that no two
// share a name.
func checkNamed[T any](list string, items []T, name func(T) string, check func(T) []*FieldError) []*FieldError {
	var errs []*FieldError
	first := map[string]int{}
	for i, item := range items {
		prefix := fmt.Sprintf("%s[%d]", list, i)
		for _, e := range check(item) {
			e.Field = prefix + "." + e.Field
			errs = append(errs, e)
		}
		n := name(item)
		if j, dup := first[n]; dup && n != "" {
			errs = append(errs, &FieldError{Field: prefix + ".name", Err: fmt.Errorf("%q: already used by %s[%d]", n, list, j)})
		} else {
			first[n] = i
		}
	}
	return errs
}

func (s Source) name() string      { return s.Name }
func (d Destination) name() string { return d.Name }

// checkListen accepts host:port with a numeric port.
// checkPostgresURL reports why u is not a valid PostgreSQL URL, without
// quoting it: it may hold a password.
func checkPostgresURL(u string) error {
	if _, err := url.Parse(u); err != nil {
		// url.Error repeats the URL, and with it any password.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("not a valid PostgreSQL URL: %v", err)
	}
	return nil
}

func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want host:port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return errors.New("want a port number 0-65535")
	}
	return nil
}

// sameAddress reports whether the host:port addresses a and b would
// listen on one socket: the same port (not 0, which picks a free one) on
// the same host, or on a host and the wildcard (an empty host, 0.0.0.0 or
// ::), which takes that port on every address.
func sameAddress(a, b string) bool {
	ha, pa, _ := net.SplitHostPort(a)
	hb, pb, _ := net.SplitHostPort(b)
	if pa != pb || pa == "0" {
		return false
	}
	wildcard := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || wildcard(ha) || wildcard(hb)
}

var sourceName = regexp.MustCompile(`^[a-z0-9_-]+$`)

func (s Source) check() []*FieldError {
	var errs []*FieldError
	add := func(field string, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Err: fmt.Errorf(format, args...)})
	}
	if !sourceName.MatchString(s.Name) {
		add("name", "%q: want lower-case letters, digits, '_' and '-'", s.Name)
	} else if s.Name == AlertSource {
		add("name", "%q: the name of hookgate's own source of alert notifications; choose another", s.Name)
	}
	p, known := provider.Lookup(s.Provider)
	if !known {
		add("provider", "unknown provider %q (want %s)", s.Provider, strings.Join(provider.Names(), "|"))
	}
	takes := func(field string, what func(*provider.Provider) bool) {
		names := provider.Where(what)
		if len(names) == 1 {
			add(field, "only for provider %s", names[0])
		} else {
			add(field, "only for providers %s", strings.Join(names, " and "))
		}
	}
	var need provider.Need
	if known {
		need = p.Secret
	}
	switch {
	case known && need == provider.Refused && !s.Secret.IsZero():
		add("secret", "not used by provider %s (%s)", p.Name, p.SecretNote)
	case known && need == provider.SecretOrToken && s.Secret.IsZero() && s.Token.IsZero():
		add("secret", "provider %s needs a secret, a token or both (env:NAME or file:PATH)", p.Name)
	case known && need == provider.Required && s.Secret.IsZero():
		add("secret", "required for provider %s (env:NAME or file:PATH)", p.Name)
	}
	errs = append(errs, checkSecretList(s.Secret)...)
	if !s.Token.IsZero() && (!known || !p.Token) {
		takes("token", func(p *provider.Provider) bool { return p.Token })
	}

	takesOrg := known && p.OrganizationID != nil
	switch {
	case takesOrg && s.OrganizationID == "":
		add("organization_id", "required for provider %s", p.Name)
	case takesOrg:
		if err := p.OrganizationID(s.OrganizationID); err != nil {
			add("organization_id", "%w", err)
		}
	case s.OrganizationID != "":
		takes("organization_id", func(p *provider.Provider) bool { return p.OrganizationID != nil })
	}

	takesSig := known && p.Signature != nil
	switch {
	case takesSig && s.Signature == nil:
		add("signature", "required for provider %s ({header, algorithm, encoding, prefix})", p.Name)
	case takesSig:
		for _, pr := range p.Signature(provider.Signature(*s.Signature)) {
			add("signature."+pr.Field, "%s", pr.Message)
		}
	case s.Signature != nil:
		takes("signature", func(p *provider.Provider) bool { return p.Signature != nil })
	}

	if s.PublicURL != "" {
		u, err := url.Parse(s.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("public_url", "%q: want an absolute http or https URL", s.PublicURL)
		}
	}
	if s.Window < 0 {
		add("window", "%s: must not be negative", s.Window)
	}
	if s.ReplayGuard != "" && s.ReplayGuard != ReplayGuardOn && s.ReplayGuard != ReplayGuardOff {
		add("replay_guard", "%q: want on or off", s.ReplayGuard)
	}

	if known && len(p.Preset.Key) == 0 && len(s.Key) == 0 {
		add("key", "required for provider %s (one or more selectors)", p.Name)
	}
	if len(s.Scope) > 2 {
		add("scope", "%d selectors: want at most 2 (object type, action)", len(s.Scope))
	}
	checkSel := func(field, sel string, r role) {
		if err := checkSelector(p, sel, r); err != nil {
			add(field, "%w", err)
		}
	}
	for i, sel := range s.Key {
		checkSel(fmt.Sprintf("key[%d]", i), sel, roleKey)
	}
	for i, sel := range s.Scope {
		checkSel(fmt.Sprintf("scope[%d]", i), sel, roleOther)
	}
	if s.Tenant != "" {
		checkSel("tenant", s.Tenant, roleTenant)
	}
	for _, f := range []struct{ field, sel string }{
		{"entity.type", s.Entity.Type}, {"entity.id", s.Entity.ID},
		{"entity.version", s.Entity.Version}, {"entity.state", s.Entity.State},
	} {
		if f.sel != "" {
			checkSel(f.field, f.sel, roleOther)
		}
	}

	if s.Schema != "" {
		if err := checkSchemaFile(s.Schema); err != nil {
			add("schema", "%q: %w", s.Schema, err)
		}
	}
	if s.ExpectEvery < 0 {
		add("expect_every", "%s: want how long the source may stay quiet, such as 1h", s.ExpectEvery)
	}
	errs = append(errs, s.checkReconcile()...)
	return append(errs, checkNamed("destinations", s.Destinations, Destination.name, Destination.check)...)
}

// checkSchemaFile reports whether path names a readable regular file; the
// worker compiles it.
func checkSchemaFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	}
	return nil
}

// urlProblem says what keeps raw from being an absolute http or https
// URL without quoting any of it, since a destination's URL may carry a
// token (a Slack webhook's path, a ?token=); "" when it is one.
func urlProblem(raw string) string {
	if raw == "" {
		return "missing"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "not a URL"
	case u.Scheme == "":
		return "no scheme"
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("scheme %q", u.Scheme)
	case u.Host == "":
		return "no host"
	}
	return ""
}

func (d Destination) check() []*FieldError {
	var errs []*FieldError
	add := func(field string, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Err: fmt.Errorf(format, args...)})
	}
	if !sourceName.MatchString(d.Name) {
		add("name", "%q: want lower-case letters, digits, '_' and '-'", d.Name)
	}
	d.checkKind(add)
	errs = append(errs, d.checkOrder()...)
	errs = append(errs, d.checkBatch()...)
	if v := d.Secret.Value(); v != "" && !validWebhookSecret(v) {
		add("secret", "%w: want a Standard Webhooks secret, whsec_ and base64 (the value is not shown)", ErrSecret)
	}
	if d.On != OnEvent && d.On != OnTransition && d.On != OnAll {
		add("on", "%q: want event, transition or all", d.On)
	}
	for i, p := range d.Types {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			add(fmt.Sprintf("types[%d]", i), "%q: not a valid pattern (path.Match syntax: *, ?, [a-z], \\)", p)
		}
	}
	errs = append(errs, checkHeaders(d.Headers)...)
	if d.Timeout <= 0 {
		add("timeout", "%s: must be positive", d.Timeout)
	}
	if d.MaxAttempts < 1 {
		add("max_attempts", "%d: want at least 1", d.MaxAttempts)
	}
	if d.RetryInitial <= 0 {
		add("retry_initial", "%s: must be positive", d.RetryInitial)
	}
	if d.RetryMaxDelay <= 0 {
		add("retry_max_delay", "%s: must be positive", d.RetryMaxDelay)
	}
	if d.RetryInitial > 0 && d.RetryMaxDelay > 0 && d.RetryInitial > d.RetryMaxDelay {
		add("retry_initial", "%s is longer than retry_max_delay (%s)", d.RetryInitial, d.RetryMaxDelay)
	}
	if d.MaxInFlight < 1 || d.MaxInFlight > MaxInFlightLimit {
		add("max_in_flight", "%d: want 1 to %d", d.MaxInFlight, MaxInFlightLimit)
	}
	if d.PauseAfter < 0 {
		add("pause_after", "%d: want 0 (never pause) or more", d.PauseAfter)
	}
	if d.PauseFor <= 0 {
		add("pause_for", "%s: must be positive", d.PauseFor)
	}
	return errs
}

// reservedHeaders are the request headers hookgate sets on every delivery
// itself, in lower case; every name starting with reservedHeaderPrefix is
// reserved too.
var reservedHeaders = []string{
	"content-type", "content-length", "host", "user-agent",
	"webhook-id", "webhook-signature", "webhook-timestamp",
}

const reservedHeaderPrefix = "x-hookgate-"

// checkHeaders checks a destination's static headers, in name order, with
// field paths headers.NAME. Values are never repeated: they may be
// credentials.
func checkHeaders(headers map[string]HeaderValue) []*FieldError {
	var errs []*FieldError
	first := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		field := "headers." + name
		add := func(format string, args ...any) {
			errs = append(errs, &FieldError{Field: field, Err: fmt.Errorf(format, args...)})
		}
		lower := strings.ToLower(name)
		switch {
		case !validHeaderName(name):
			add("%q: not a valid header name (want an HTTP token: letters, digits and !#$%%&'*+-.^_`|~)", name)
		case slices.Contains(reservedHeaders, lower) || strings.HasPrefix(lower, reservedHeaderPrefix):
			add("%q: set by hookgate itself, cannot be configured (reserved: Content-Type, Content-Length, Host, User-Agent, webhook-id, webhook-signature, webhook-timestamp, X-Hookgate-*)", name)
		case first[lower] != "":
			add("%q: same header as %q (names are case-insensitive)", name, first[lower])
		default:
			first[lower] = name
		}
		v := headers[name]
		switch {
		case v.Ref() == "" && v.Value() == "":
			add("empty value: want text, env:NAME or file:PATH")
		case !validHeaderValue(v.Value()):
			add("value contains CR, LF, NUL or another control character (the value is not shown)")
		}
	}
	return errs
}

// validHeaderValue reports whether v can be sent as a header's value: no
// control characters but horizontal tab (RFC 9110 field-value), so neither
// CR, LF nor NUL can split or end the header.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// checkSecretList checks a source's secret list: at most [MaxSecrets],
// every element set, no reference twice (a copy would keep an index that
// can never count a request, and rotating would look unfinished).
func checkSecretList(sec Secret) []*FieldError {
	if !sec.IsList() {
		return nil
	}
	var errs []*FieldError
	all := sec.All()
	if len(all) > MaxSecrets {
		errs = append(errs, &FieldError{Field: "secret", Err: fmt.Errorf("%w: %d secrets, at most %d", ErrSecret, len(all), MaxSecrets)})
	}
	seen := map[string]int{}
	for i, e := range all {
		field := fmt.Sprintf("secret[%d]", i)
		if e.IsZero() {
			errs = append(errs, &FieldError{Field: field, Err: fmt.Errorf("%w: empty", ErrSecret)})
			continue
		}
		if e.Ref() == "" {
			continue
		}
		if j, ok := seen[e.Ref()]; ok {
			errs = append(errs, &FieldError{Field: field, Err: fmt.Errorf("%w: %s is secret[%d] again", ErrSecret, e.Ref(), j)})
		}
		seen[e.Ref()] = i
	}
	return errs
}

// validWebhookSecret reports whether v is a Standard Webhooks key: base64,
// optionally after "whsec_", of at least one byte.
func validWebhookSecret(v string) bool {
	b64 := strings.TrimPrefix(v, "whsec_")
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(b64)
	}
	return err == nil && len(key) > 0
}

// role is what a selector selects, as far as its rules differ.
type role int

const (
	roleOther  role = iota // scope and entity: may be empty
	roleKey                // an event id part: must not be empty
	roleTenant             // the tenant: must not be empty; may be path
)

// checkSelector checks sel's syntax, that it fits its role, and that the
// bodies of p (nil for an unknown provider) can answer it.
func checkSelector(p *provider.Provider, sel string, r role) error {
	parsed, err := ParseSelector(sel)
	if err != nil {
		return err
	}
	soap := p != nil && p.Preset.Body == provider.BodySOAP
	switch {
	case parsed.Kind == SelectPath && r != roleTenant:
		return fmt.Errorf("%w %q: path is only valid as the tenant", ErrSelector, sel)
	case parsed.Kind == SelectConst && parsed.Name == "" && r != roleOther:
		return fmt.Errorf("%w %q: needs a value after the colon", ErrSelector, sel)
	case parsed.Kind == SelectXML && !soap:
		return fmt.Errorf("%w %q: xml selectors need provider %s", ErrSelector, sel,
			strings.Join(provider.Where(func(p *provider.Provider) bool { return p.Preset.Body == provider.BodySOAP }), " or "))
	case parsed.Kind == SelectJSON && soap:
		return fmt.Errorf("%w %q: %s bodies are XML (use xml:PATH)", ErrSelector, sel, p.Name)
	}
	return nil
}
