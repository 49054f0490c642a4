package config

import (
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hookgate/hookgate/internal/provider"
)

// Defaults for everything a configuration leaves out.
const (
	// DefaultListen is the address the gateway listens on.
	DefaultListen = "127.0.0.1:8080"
	// DefaultDatabase is the embedded SQLite file in the working directory.
	DefaultDatabase = "sqlite:hookgate.db"
	// DefaultMaxBody is the largest request body accepted.
	DefaultMaxBody ByteSize = 1 << 20
	// DefaultMaxConnections is how many connections the intake listener
	// keeps open at once.
	DefaultMaxConnections = 4096
	// DefaultMaxPendingBody is how many request body bytes all requests
	// together may hold before they are authenticated.
	DefaultMaxPendingBody ByteSize = 64 << 20
	// DefaultMinBodyRate is limits.min_body_rate when the configuration
	// does not set it.
	DefaultMinBodyRate ByteSize = 4 << 10
	// DefaultBodyGrace is limits.body_grace when the configuration does
	// not set it.
	DefaultBodyGrace = Duration(5 * time.Second)
	// DefaultWindow is how long a dedupe key is kept: longer than every
	// provider's retry window.
	DefaultWindow = Duration(168 * time.Hour)
	// DefaultStoreTimeout bounds one write of intake's events to the store:
	// past it the senders are answered 503 + Retry-After (see
	// [Dedupe.StoreTimeout]).
	DefaultStoreTimeout = Duration(5 * time.Second)
	// DefaultWorkers is how many workers process events.
	DefaultWorkers = 4
	// DefaultBatch is how many events a worker leases at a time.
	DefaultBatch = 200
	// MaxBatch is the largest batch a worker may lease.
	MaxBatch = 1000
	// DefaultRetention is how long processed events are kept.
	DefaultRetention = Duration(720 * time.Hour)
	// DefaultSweepEvery is the period of the sweep of expired keys and
	// old events.
	DefaultSweepEvery = Duration(time.Hour)
	// DefaultLease is how long a worker holds a delivery before another may
	// take it over: the time a crashed worker's deliveries wait.
	DefaultLease = Duration(time.Minute)
	// MinLease is the shortest lease; a lease must also exceed every
	// destination's timeout by [LeaseMargin].
	MinLease = Duration(time.Second)
	// LeaseMargin is the room a lease keeps beyond a destination's timeout
	// to record the attempt before the lease runs out.
	LeaseMargin = Duration(time.Second)
	// DefaultTimeout is how long one delivery to a destination may take.
	DefaultTimeout = Duration(10 * time.Second)
	// DefaultMaxAttempts is how many times an event is offered to a
	// destination before it is dead. With [DefaultRetryInitial] and
	// [DefaultRetryMaxDelay] the retries span up to about 19 hours (half
	// that on average, with full jitter), so that a routine outage or
	// deploy of the application fills no dead list.
	DefaultMaxAttempts = 20
	// DefaultRetryInitial is the backoff before a destination's second
	// attempt; each later one doubles it, up to [DefaultRetryMaxDelay].
	DefaultRetryInitial = Duration(5 * time.Second)
	// DefaultRetryMaxDelay caps the backoff between two attempts, and the
	// wait a destination's Retry-After can ask for.
	DefaultRetryMaxDelay = Duration(2 * time.Hour)
	// DefaultMaxInFlight is how many deliveries to one destination a node
	// has in flight at once.
	DefaultMaxInFlight = 16
	// MaxInFlightLimit is the largest max_in_flight a destination may set.
	MaxInFlightLimit = 1024
	// DefaultPauseAfter is how many failed attempts in a row pause a
	// destination.
	DefaultPauseAfter = 5
	// DefaultPauseFor is how long a paused destination waits before one
	// delivery probes it.
	DefaultPauseFor = Duration(30 * time.Second)
)

// When a destination is called.
const (
	// OnEvent delivers every event of the source that is not stale (the
	// default).
	OnEvent = "event"
	// OnTransition delivers only events that changed their entity's state.
	OnTransition = "transition"
	// OnAll delivers every event, stale ones included: for audit sinks.
	OnAll = "all"
)

// What intake does with a new event when the database cannot be reached.
const (
	// OnStoreErrorReject answers 503 with Retry-After so the sender
	// retries (the default).
	OnStoreErrorReject = "reject"
	// OnStoreErrorSpool accepts it into the node's local spool
	// (dedupe.spool), which drains into the database when it answers.
	OnStoreErrorSpool = "spool"
)

// Config is the whole gateway configuration.
type Config struct {
	// Listen is the HTTP listen address, host:port.
	Listen string `yaml:"listen"`
	// Database is "sqlite:PATH" or a postgres:// URL, which may be a
	// transaction pooler's.
	Database string `yaml:"database"`
	// DatabaseSession is an optional postgres:// URL that reaches the
	// database server directly, bypassing any pooler, for what needs a
	// session of its own: the lead as a session lock and LISTEN for new
	// events. Without it a database reached directly is its own session,
	// and behind a pooler the lead is a lease row and workers poll.
	DatabaseSession string `yaml:"database_session,omitempty"`
	// MaxBody is the largest request body accepted (413 above it).
	MaxBody ByteSize `yaml:"max_body"`
	// Limits bound what unauthenticated senders can make the gateway hold.
	Limits Limits `yaml:"limits"`
	// Dedupe holds the defaults of deduplication.
	Dedupe Dedupe `yaml:"dedupe"`
	// Workers is how many workers process events; at least 1.
	Workers int `yaml:"workers"`
	// Batch is how many events a worker leases at a time: 1 to [MaxBatch].
	Batch int `yaml:"batch"`
	// Retention is how long processed events are kept before the sweep
	// removes them.
	Retention Duration `yaml:"retention"`
	// SweepEvery is the period of the sweep inside `hookgate serve`.
	SweepEvery Duration `yaml:"sweep_every"`
	// Lease is how long a worker holds one delivery (an event for one
	// destination) before another worker may take it over; after a crash,
	// its deliveries wait this long. At least [MinLease], and at least
	// every destination's timeout plus [LeaseMargin], so that an attempt
	// is recorded before its lease runs out.
	Lease Duration `yaml:"lease"`
	// Admin configures the admin API (off without a token) and the
	// address the operator's routes are served on.
	Admin Admin `yaml:"admin,omitempty"`
	// Metrics configures /metrics.
	Metrics Metrics `yaml:"metrics,omitempty"`
	// Alerts says when incidents open and where they are notified.
	Alerts Alerts `yaml:"alerts,omitempty"`
	// Sources are the configured senders, served at POST /in/{name}.
	Sources []Source `yaml:"sources"`
}

// Limits bound what requests hold before they are authenticated, so that
// a flood of idle connections or slow bodies is answered 503 instead of
// exhausting file descriptors or memory.
type Limits struct {
	// MaxConnections is how many connections the intake listener keeps
	// open at once. A connection beyond it makes room by closing the
	// connection idle longest (between keep-alive requests, or silent
	// since it opened); when every connection is in a request, it is
	// answered 503 with Retry-After and closed.
	MaxConnections int `yaml:"max_connections"`
	// MaxPendingBody is how many request body bytes all requests together
	// may hold before authentication (each counts its Content-Length, or
	// max_body when it sends none); a request beyond it is answered 503
	// with Retry-After before its body is read. A quarter of it is kept
	// for bodies of at most 64 KiB. At least max_body.
	MaxPendingBody ByteSize `yaml:"max_pending_body"`
	// MinBodyRate is the slowest a request body may arrive, in bytes a
	// second: a body that has not arrived within body_grace plus its
	// size at this rate is answered 408 and its connection closed, and,
	// at max_connections with no connection idle, the connection whose
	// body is furthest behind this rate is closed to make room. Zero
	// turns both off.
	MinBodyRate ByteSize `yaml:"min_body_rate"`
	// BodyGrace is how far behind min_body_rate a body may fall before it
	// is answered 408: a sender's first bytes may wait on a slow start.
	BodyGrace Duration `yaml:"body_grace"`
}

// Dedupe holds the defaults of deduplication.
type Dedupe struct {
	// Window is how long a key is kept unless its source sets its own.
	Window Duration `yaml:"window"`
	// OnStoreError is [OnStoreErrorReject] or [OnStoreErrorSpool].
	OnStoreError string `yaml:"on_store_error"`
	// StoreTimeout is the deadline of each write of intake's events to the
	// store: a store that has not answered by then (a hung database, a
	// stalled disk) fails the write, nothing of it is kept, and its
	// senders get 503 + Retry-After. With on_store_error: spool it bounds
	// the database's try and the spooling together. Positive.
	StoreTimeout Duration `yaml:"store_timeout"`
	// Spool is the file of the node's spool: required with
	// on_store_error: spool, on a local disk of the node.
	Spool string `yaml:"spool,omitempty"`
	// Front is the URL of the Redis front the nodes share
	// (redis://host:port/db or rediss://...); empty: none.
	Front string `yaml:"front,omitempty"`
	// FrontPrefix is the key prefix of the front's keys in Redis, the
	// same on every node of one gateway; gateways (or tests) sharing one
	// Redis each take their own. Empty means "hookgate".
	FrontPrefix string `yaml:"front_prefix,omitempty"`
}

// Source is one configured sender.
type Source struct {
	// Name is the URL segment (POST /in/{name}) and the key's provider part:
	// lower-case letters, digits, '_' and '-'; unique.
	Name string `yaml:"name"`
	// Provider selects the preset: one of internal/provider's names.
	Provider string `yaml:"provider"`
	// Secret is the signing secret; required by every provider but those
	// that sign nothing (none) or take a token instead (a secret, a token
	// or both). A list of
	// at most [MaxSecrets] (the new secret first) accepts a request signed
	// with any of them, so that a secret can be rotated without refusing
	// the sender while it and hookgate change over.
	Secret Secret `yaml:"secret,omitempty"`
	// Token is the ?token= URL parameter, for the providers that take one;
	// optional.
	Token Secret `yaml:"token,omitempty"`
	// Tenant is the tenant selector; "" keeps the preset's (or none). Only
	// here may it be "path", the /in/{source}/{tenant} segment.
	Tenant string `yaml:"tenant,omitempty"`
	// PublicURL is the URL the sender posts to, when a proxy rewrites it
	// (HubSpot signs the URL).
	PublicURL string `yaml:"public_url,omitempty"`
	// OrganizationID is the organization that must have sent the message;
	// required by the providers that check one, and only for them.
	OrganizationID string `yaml:"organization_id,omitempty"`
	// Signature describes the signature header; required by the generic
	// HMAC provider, only there.
	Signature *Signature `yaml:"signature,omitempty"`
	// Key is the event id selectors, joined in order; replaces the preset's.
	// Required for a provider whose preset has none (hmac).
	Key []string `yaml:"key,omitempty,flow"`
	// Scope is the object type and action selectors (0-2, in that order);
	// when set it replaces the preset's scope.
	Scope []string `yaml:"scope,omitempty,flow"`
	// Window is how long this source's keys are kept; 0 means Dedupe.Window.
	Window Duration `yaml:"window,omitempty"`
	// ReplayGuard is [ReplayGuardOn] or [ReplayGuardOff]. On, each
	// accepted request also records a digest of what its signature covers
	// for Window, and a later request with the same signed content is a
	// duplicate whatever its unsigned headers or path tenant say. Absent,
	// it is [Source.DefaultReplayGuard]: on exactly when the key, scope or
	// tenant is read from something the signature does not cover.
	ReplayGuard string `yaml:"replay_guard,omitempty"`
	// Entity overrides the preset's entity selectors field by field.
	Entity Entity `yaml:"entity,omitempty"`
	// Schema is the JSON Schema (2020-12) file events are validated
	// against; "" validates nothing. In a file, a relative path is taken
	// from the configuration file's directory, and Load stores the
	// resolved path.
	Schema string `yaml:"schema,omitempty"`
	// ExpectEvery opens source.silent when no event arrived for that long;
	// zero: the source may stay quiet.
	ExpectEvery Duration `yaml:"expect_every,omitempty"`
	// Destinations are where the source's events are delivered.
	Destinations []Destination `yaml:"destinations,omitempty"`
	// Reconcile, when set, lists what the provider says it sent and
	// recovers the events whose webhook never came; nil: off.
	Reconcile *Reconcile `yaml:"reconcile,omitempty"`
}

// Credentials are what the source's verifier needs besides its secrets.
func (s Source) Credentials() provider.Credentials {
	c := provider.Credentials{Token: s.Token.Value(), OrganizationID: s.OrganizationID}
	if s.Signature != nil {
		c.Signature = provider.Signature(*s.Signature)
	}
	return c
}

// Admin configures the admin API.
type Admin struct {
	// Token is the bearer token the admin API requires; unset, the admin
	// API is off.
	Token Secret `yaml:"token,omitempty"`
	// Listen is the host:port of the operator's listener. Set, /api and
	// /metrics (and every other operator route) are served there and
	// only there, not on the public intake listener, which then serves
	// /in, /healthz and /readyz alone. Empty, they share Listen. It must
	// differ from Listen.
	Listen string `yaml:"listen,omitempty"`
}

// Metrics configures the Prometheus endpoint, /metrics.
type Metrics struct {
	// Token is the bearer token /metrics requires (Authorization: Bearer
	// TOKEN); unset, /metrics is open to whoever reaches its listener.
	Token Secret `yaml:"token,omitempty"`
	// Public serves /metrics on the public listener without a token.
	// /metrics names every source and destination, so without
	// admin.listen, a token or this, it is not served at all.
	Public bool `yaml:"public,omitempty"`
}

// Destination is an endpoint that a source's events are delivered to, with
// its processing policy. Absent from the YAML, On, Timeout, MaxAttempts and
// the retry, in-flight and pause fields take their defaults; written out,
// they must be valid (an explicit "timeout: 0s" is an error). A
// destination built in code gets them from [Destination.WithDefaults].
type Destination struct {
	// Name identifies the destination in delivery records and metrics:
	// lower-case letters, digits, '_' and '-'; unique within its source.
	Name string `yaml:"name"`
	// URL is the absolute http or https URL events are POSTed to, or a
	// broker's (nats://, amqp://, amqps://, kafka://): its scheme chooses
	// the destination's kind (see [Destination.Kind]).
	URL string `yaml:"url"`
	// Subject is a NATS destination's subject; Exchange and RoutingKey a
	// RabbitMQ destination's (RoutingKey "{source}.{type}" when absent);
	// Topic a Kafka destination's. Each may hold {source}, {tenant} and
	// {type}, filled per event.
	Subject    string `yaml:"subject,omitempty"`
	Exchange   string `yaml:"exchange,omitempty"`
	RoutingKey string `yaml:"routing_key,omitempty"`
	Topic      string `yaml:"topic,omitempty"`
	// Password is a broker's password, by reference; the user is the
	// URL's.
	Password Secret `yaml:"password,omitempty"`
	// Secret is the Standard Webhooks signing secret (whsec_ and base64);
	// unset, deliveries are not signed.
	Secret Secret `yaml:"secret,omitempty"`
	// On is [OnEvent], [OnTransition] or [OnAll]; [OnEvent] when absent.
	On string `yaml:"on"`
	// Types, when set, limits the destination to events whose type (the
	// provider's name for what happened: Stripe's charge.succeeded,
	// GitHub's push, Shopify's orders/create) matches one of these
	// patterns, in the syntax of Go's path.Match ("charge.*",
	// "orders/*"; '*' does not cross a '/').
	Types []string `yaml:"types,omitempty"`
	// Headers are static request headers sent with every delivery, by
	// name. Names that hookgate sets itself (Content-Type, Content-Length,
	// Host, User-Agent, webhook-id, webhook-signature, webhook-timestamp,
	// X-Hookgate-*) are refused.
	Headers map[string]HeaderValue `yaml:"headers,omitempty"`
	// Timeout bounds one delivery attempt; [DefaultTimeout] when absent.
	Timeout Duration `yaml:"timeout"`
	// MaxAttempts is how many attempts a destination gets before the
	// event is dead; [DefaultMaxAttempts] when absent.
	MaxAttempts int `yaml:"max_attempts"`
	// RetryInitial is the backoff before the second attempt; each later
	// one doubles it, with full jitter (a random wait between zero and the
	// backoff); [DefaultRetryInitial] when absent. At most RetryMaxDelay.
	RetryInitial Duration `yaml:"retry_initial"`
	// RetryMaxDelay caps the backoff, and the wait a Retry-After header
	// of the destination can ask for; [DefaultRetryMaxDelay] when absent.
	RetryMaxDelay Duration `yaml:"retry_max_delay"`
	// MaxInFlight is how many deliveries (batches, with Batch) to this
	// destination one node has in flight at once: 1 to
	// [MaxInFlightLimit]; [DefaultMaxInFlight] when absent.
	MaxInFlight int `yaml:"max_in_flight"`
	// PauseAfter is how many failed attempts in a row (timeouts,
	// connection errors, 408, 429, 5xx; a refusal does not count) pause
	// the destination: for PauseFor no delivery to it is made, so no
	// event spends its attempts on a destination that is down; then one
	// delivery probes it, and success resumes it. 0 never pauses;
	// [DefaultPauseAfter] when absent.
	PauseAfter int `yaml:"pause_after"`
	// PauseFor is how long a pause lasts; [DefaultPauseFor] when absent.
	PauseFor Duration `yaml:"pause_for"`
	// Order is [OrderEntity] to deliver the events of one key one at a
	// time, in entity version order (inbox id for ties), on every node;
	// different keys go in parallel up to MaxInFlight, and a failing key
	// backs off alone. Absent: no order (deliveries go in parallel).
	Order string `yaml:"order,omitempty"`
	// OrderKey chooses the key of Order: a selector read from the stored
	// event (json:PATH of the payload, header:NAME of its kept headers,
	// const:VALUE). Absent: the entity (tenant, type and id), or the
	// event's key for an event without one.
	OrderKey string `yaml:"order_key,omitempty"`
	// OnExhausted says what an ordered key does when one of its
	// deliveries fails for good: [OnExhaustedSkip] (also when absent)
	// lets the key move on, [OnExhaustedBlock] holds it until an operator
	// replays the event.
	OnExhausted string `yaml:"on_exhausted,omitempty"`
	// Rate is the most deliveries made to this destination by every
	// node together ("100/s", "6000/m"); absent: no limit. A 429 answer
	// with a Retry-After holds the destination's deliveries until then,
	// on every node when Rate is set.
	Rate Rate `yaml:"rate,omitempty"`
	// Batch, on an HTTP destination, sends up to Batch.Max events in one
	// POST (a JSON array), and makes MaxInFlight count batches. Absent:
	// one event per POST.
	Batch *DeliveryBatch `yaml:"batch,omitempty"`
}

// Signature describes a generic HMAC signature header.
type Signature struct {
	// Header carries the signature.
	Header string `yaml:"header"`
	// Algorithm is the hash: sha1, sha256 (the default) or sha512.
	Algorithm string `yaml:"algorithm,omitempty"`
	// Encoding is the digest's text form: hex (the default) or base64.
	Encoding string `yaml:"encoding,omitempty"`
	// Prefix precedes the encoded digest in the header ("sha256=").
	Prefix string `yaml:"prefix,omitempty"`
}

// Entity holds the selectors of the entity an event is about; "" keeps the
// preset's.
type Entity struct {
	// Type selects the entity's type (charge, deal, ...).
	Type string `yaml:"type,omitempty"`
	// ID selects the entity's id within its type.
	ID string `yaml:"id,omitempty"`
	// Version selects the value that orders the entity's events: a number or
	// an RFC 3339 time.
	Version string `yaml:"version,omitempty"`
	// State selects the entity's state, whose changes fire transitions.
	State string `yaml:"state,omitempty"`
}

// Default returns the configuration used when there is no file: the
// embedded SQLite store, no sources.
func Default() Config {
	return Config{
		Listen:   DefaultListen,
		Database: DefaultDatabase,
		MaxBody:  DefaultMaxBody,
		Limits: Limits{MaxConnections: DefaultMaxConnections, MaxPendingBody: DefaultMaxPendingBody,
			MinBodyRate: DefaultMinBodyRate, BodyGrace: DefaultBodyGrace},
		Dedupe:     Dedupe{Window: DefaultWindow, OnStoreError: OnStoreErrorReject, StoreTimeout: DefaultStoreTimeout},
		Workers:    DefaultWorkers,
		Batch:      DefaultBatch,
		Retention:  DefaultRetention,
		SweepEvery: DefaultSweepEvery,
		Lease:      DefaultLease,
		Alerts:     defaultAlerts(),
	}
}

// Load reads and parses the configuration file at path. Relative schema
// paths are resolved from path's directory.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	cfg, err := parse(data, filepath.Dir(path), os.LookupEnv)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes a YAML configuration strictly, fills in defaults, reads the
// secrets from the environment and files, and validates the result. Empty
// data gives [Default]. Relative schema paths are taken from the working
// directory.
func Parse(data []byte) (Config, error) {
	return parse(data, "", os.LookupEnv)
}

// parse is Parse with relative schema paths taken from dir and the
// environment read through lookupEnv.
func parse(data []byte, dir string, lookupEnv func(string) (string, bool)) (Config, error) {
	cfg, root, err := decodeYAML(data)
	if err != nil || root == nil {
		return cfg, err
	}
	lines := map[string]int{}
	nodeLines(root, "", lines)
	for i := range cfg.Sources {
		s := &cfg.Sources[i]
		if s.Window == 0 {
			s.Window = cfg.Dedupe.Window
		}
		if s.ReplayGuard == "" {
			s.ReplayGuard = s.DefaultReplayGuard()
		}
		if s.Schema != "" && dir != "" && !filepath.IsAbs(s.Schema) {
			s.Schema = filepath.Join(dir, s.Schema)
		}
		for j := range s.Destinations {
			s.Destinations[j].fillDefaults(fmt.Sprintf("sources[%d].destinations[%d]", i, j), lines)
		}
		if s.Reconcile != nil {
			s.Reconcile.fillDefaults(fmt.Sprintf("sources[%d].reconcile", i), lines)
		}
	}

	var errs []*FieldError
	resolve := func(field string, s *Secret) {
		if s.IsList() {
			errs = append(errs, &FieldError{Field: field, Err: fmt.Errorf("%w: takes one secret, not a list", ErrSecret)})
			return
		}
		if err := s.resolve(lookupEnv); err != nil {
			errs = append(errs, &FieldError{Field: field, Err: err})
		}
	}
	resolve("admin.token", &cfg.Admin.Token)
	resolve("metrics.token", &cfg.Metrics.Token)
	for i := range cfg.Alerts.Channels {
		c := &cfg.Alerts.Channels[i]
		path := fmt.Sprintf("alerts.channels[%d]", i)
		resolve(path+".url", &c.URL.secret)
		resolve(path+".secret", &c.Secret)
		resolve(path+".password", &c.Password)
	}
	for i := range cfg.Sources {
		s := &cfg.Sources[i]
		s.Secret.resolveList(fmt.Sprintf("sources[%d].secret", i), func(field string, e *Secret) {
			if err := e.resolve(lookupEnv); err != nil {
				errs = append(errs, &FieldError{Field: field, Err: err})
			}
		})
		resolve(fmt.Sprintf("sources[%d].token", i), &s.Token)
		if s.Reconcile != nil {
			s.Reconcile.resolveSecrets(fmt.Sprintf("sources[%d].reconcile", i), resolve)
		}
		for j := range s.Destinations {
			d := &s.Destinations[j]
			path := fmt.Sprintf("sources[%d].destinations[%d]", i, j)
			resolve(path+".secret", &d.Secret)
			resolve(path+".password", &d.Password)
			for _, name := range slices.Sorted(maps.Keys(d.Headers)) {
				v := d.Headers[name]
				resolve(path+".headers."+name, &v.secret)
				d.Headers[name] = v
			}
		}
	}
	errs = append(errs, cfg.check()...)
	if len(errs) > 0 {
		return Config{}, joinFieldErrors(errs, lines)
	}
	return cfg, nil
}

// fillDefaults sets the fields that the YAML mapping at path (as recorded
// in lines by nodeLines) leaves out to their defaults. Fields written out
// are kept as they are, so that an explicit zero fails validation.
func (d *Destination) fillDefaults(path string, lines map[string]int) {
	d.setDefaults(func(key string, _ bool) bool {
		_, ok := lines[path+"."+key]
		return !ok
	})
}

// WithDefaults returns d with each field that has a default and holds its
// zero value set to that default, for destinations built in code. (Parse
// fills in only the fields the YAML leaves out, so that an explicit zero
// there is an error.)
func (d Destination) WithDefaults() Destination {
	d.setDefaults(func(_ string, zero bool) bool { return zero })
	return d
}

// setDefaults sets each field with a default for which unset, given the
// field's YAML key and whether it holds its zero value, reports true.
func (d *Destination) setDefaults(unset func(key string, zero bool) bool) {
	if unset("on", d.On == "") {
		d.On = OnEvent
	}
	if unset("timeout", d.Timeout == 0) {
		d.Timeout = DefaultTimeout
	}
	if unset("max_attempts", d.MaxAttempts == 0) {
		d.MaxAttempts = DefaultMaxAttempts
	}
	if unset("retry_initial", d.RetryInitial == 0) {
		d.RetryInitial = DefaultRetryInitial
	}
	if unset("retry_max_delay", d.RetryMaxDelay == 0) {
		d.RetryMaxDelay = DefaultRetryMaxDelay
	}
	if unset("max_in_flight", d.MaxInFlight == 0) {
		d.MaxInFlight = DefaultMaxInFlight
	}
	if unset("pause_after", d.PauseAfter == 0) {
		d.PauseAfter = DefaultPauseAfter
	}
	if unset("pause_for", d.PauseFor == 0) {
		d.PauseFor = DefaultPauseFor
	}
	if d.Kind() == KindRabbitMQ && unset("routing_key", d.RoutingKey == "") {
		d.RoutingKey = "{source}.{type}"
	}
}

// nodeLines records the line of every field path below n
// ("sources[2].provider"), following aliases and merge keys as the
// decoder does: a key merged in (<<: *defaults) is recorded where it is
// written, unless the mapping sets it itself.
func nodeLines(n *yaml.Node, path string, lines map[string]int) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			nodeLines(c, path, lines)
		}
	case yaml.AliasNode:
		if n.Alias != nil {
			nodeLines(n.Alias, path, lines)
		}
	case yaml.MappingNode:
		lines[path] = n.Line
		set := map[string]bool{}
		record := func(k, v *yaml.Node) {
			p := joinPath(path, k.Value)
			lines[p] = k.Line
			nodeLines(v, p, lines)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.ShortTag() != mergeTag {
				set[k.Value] = true
				record(k, n.Content[i+1])
			}
		}
		eachMerged(n, set, record, func(*yaml.Node) {})
	case yaml.SequenceNode:
		lines[path] = n.Line
		for i, c := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			lines[p] = c.Line
			nodeLines(c, p, lines)
		}
	}
}

// Source returns the source called name.
func (c Config) Source(name string) (*Source, bool) {
	for i := range c.Sources {
		if c.Sources[i].Name == name {
			return &c.Sources[i], true
		}
	}
	return nil, false
}

// PostgresURL returns a postgres:// or postgresql:// database, or "" for
// any other.
func (c Config) PostgresURL() string {
	if isPostgresURL(c.Database) {
		return c.Database
	}
	return ""
}

// isPostgresURL reports whether s is a postgres:// or postgresql:// URL.
func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// SQLitePath returns the file of a "sqlite:PATH" database, or "" for any
// other database.
func (c Config) SQLitePath() string {
	if p, ok := strings.CutPrefix(c.Database, "sqlite:"); ok {
		return p
	}
	return ""
}

// Redacted returns the configuration as YAML with every secret written as
// "****", and the password of every URL as "xxxxx", for
// `hookgate check-config`.
func (c Config) Redacted() ([]byte, error) {
	c.Database = redactPassword(c.Database)
	c.DatabaseSession = redactPassword(c.DatabaseSession)
	c.Dedupe.Front = redactPassword(c.Dedupe.Front)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return buf.Bytes(), nil
}

// redactPassword writes the password of the URL s, if it has one, as
// "xxxxx" (url.URL.Redacted); anything else is returned as it is.
func redactPassword(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Redacted()
}
