package front

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/redis"
	"github.com/hookgate/hookgate/internal/lograte"
)

// Defaults of the zero Options.
const (
	// DefaultTimeout bounds each call to Redis: an intake request waits
	// at most this long before the database decides without the front.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultLease is how long a claim holds a key for the inbox write
	// that follows it (a group commit: milliseconds). A claim that outlives
	// its node, or whose answer arrived after the timeout so that nobody
	// commits it, answers copies 409 no longer than this; a lease that
	// ends before a slow write lets the next copy through to the inbox,
	// which decides. So it is short.
	DefaultLease = 5 * time.Second
	// DefaultRetryAfter is how long the front is bypassed after Redis
	// failed, before the next call tries it again.
	DefaultRetryAfter = time.Second
)

// Options configures a [Front]. The zero value is ready to use.
type Options struct {
	// Prefix is the key prefix the nodes of one gateway share; empty
	// means redis.DefaultPrefix.
	Prefix string
	// Timeout bounds each call to Redis; zero means DefaultTimeout.
	Timeout time.Duration
	// Lease is how long a claim holds its key; zero means DefaultLease.
	Lease time.Duration
	// RetryAfter is how long a failed Redis is bypassed before the front
	// tries it again; zero means DefaultRetryAfter.
	RetryAfter time.Duration
	// Logger receives one line when an outage begins and one when it
	// ends; nil means slog.Default().
	Logger *slog.Logger
}

// Verdict is the front's answer for one event.
type Verdict uint8

const (
	// Unknown: Redis did not answer (down, slow, or bypassed during an
	// outage); the inbox decides alone.
	Unknown Verdict = iota
	// Claimed: nobody holds the key; this node holds a lease on it until
	// it commits or releases it.
	Claimed
	// Duplicate: the inbox stored the event; the answer needs no inbox.
	Duplicate
	// InFlightElsewhere: another node holds a lease on the key while it
	// writes the event (409 and Retry-After until Expires).
	InFlightElsewhere
)

func (v Verdict) String() string {
	switch v {
	case Unknown:
		return "unknown"
	case Claimed:
		return "claimed"
	case Duplicate:
		return "duplicate"
	case InFlightElsewhere:
		return "in-flight-elsewhere"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// Answer is the front's answer for one hash.
type Answer struct {
	Verdict Verdict
	// Lease is set when Verdict is Claimed.
	Lease dedupe.Lease
	// FirstSeen and Expires are set for Duplicate (when the event was
	// first seen, when its window ends) and InFlightElsewhere (when the
	// other node's lease began and ends).
	FirstSeen, Expires time.Time
}

// Committed is what the inbox decided about an event: it holds it, first
// seen at FirstSeen, a duplicate until Expires.
type Committed = redis.Committed

// ErrBypassed is returned by Commit and Release while an outage bypasses
// Redis: they were not sent.
var ErrBypassed = errors.New("front: redis bypassed during an outage")

// Front is the Redis front of the gateway's dedupe. It is safe for
// concurrent use.
type Front struct {
	store      *redis.Store
	lease      time.Duration
	retryAfter time.Duration
	logs       *lograte.Logger
	now        func() time.Time

	mu        sync.Mutex
	down      bool      // Redis failed and has not answered since
	downSince time.Time // when the outage began
	retryAt   time.Time // when the next call may try Redis
	probing   bool      // a call is trying Redis during an outage

	up       prometheus.Gauge
	failures prometheus.Counter
	bypassed prometheus.Counter
}

var _ prometheus.Collector = (*Front)(nil)

// New returns a front on client. Calls are bounded by Options.Timeout
// through their context, which client honours only with
// ContextTimeoutEnabled set.
func New(client goredis.UniversalClient, opts Options) (*Front, error) {
	s, err := redis.New(client, storeOptions(opts))
	if err != nil {
		return nil, err
	}
	return newFront(s, opts)
}

// Open connects to the Redis server at url (redis://host:port/db) with a
// client that honours Options.Timeout; [Front.Close] closes it.
func Open(url string, opts Options) (*Front, error) {
	s, err := redis.Open(url, storeOptions(opts))
	if err != nil {
		return nil, err
	}
	f, err := newFront(s, opts)
	if err != nil {
		s.Close()
		return nil, err
	}
	return f, nil
}

// storeOptions are the options of the front's store.
func storeOptions(opts Options) redis.Options {
	return redis.Options{Prefix: opts.Prefix, Timeout: orDefault(opts.Timeout, DefaultTimeout)}
}

func newFront(s *redis.Store, opts Options) (*Front, error) {
	if opts.Lease < 0 || opts.RetryAfter < 0 {
		return nil, fmt.Errorf("front: lease %v, retry after %v: may not be negative", opts.Lease, opts.RetryAfter)
	}
	f := &Front{
		store:      s,
		lease:      orDefault(opts.Lease, DefaultLease),
		retryAfter: orDefault(opts.RetryAfter, DefaultRetryAfter),
		logs:       lograte.New(loggerOrDefault(opts.Logger)),
		now:        time.Now,
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookgate_front_up",
			Help: "1 while the Redis front answers, 0 during an outage (the inbox decides alone).",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookgate_front_failures_total",
			Help: "Calls to the Redis front that failed or timed out.",
		}),
		bypassed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookgate_front_bypassed_total",
			Help: "Events the Redis front could not answer, decided by the inbox alone.",
		}),
	}
	f.up.Set(1)
	return f, nil
}

// orDefault returns d, or def when d is zero.
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func loggerOrDefault(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// Close closes the connections if the front was made by [Open].
func (f *Front) Close() error {
	return f.store.Close()
}

// Check claims each hash in one round trip. When Redis fails, times out
// or is bypassed during an outage, every answer is Unknown.
func (f *Front) Check(ctx context.Context, hashes []dedupe.Hash) []Answer {
	answers := make([]Answer, len(hashes))
	if len(hashes) == 0 {
		return answers
	}
	if !f.enter() {
		f.bypassed.Add(float64(len(hashes)))
		return answers
	}
	rs, err := f.store.Claim(ctx, f.lease, hashes...)
	f.done(ctx, err)
	if err != nil {
		f.bypassed.Add(float64(len(hashes)))
		return answers
	}
	for i, r := range rs {
		a := &answers[i]
		switch r.Status {
		case dedupe.New:
			a.Verdict, a.Lease = Claimed, r.Lease
		case dedupe.Duplicate:
			a.Verdict, a.FirstSeen, a.Expires = Duplicate, r.FirstSeen, r.Expires
		case dedupe.InFlight:
			a.Verdict, a.FirstSeen, a.Expires = InFlightElsewhere, r.FirstSeen, r.Expires
		}
	}
	return answers
}

// Commit tells Redis what the inbox committed: the events it stored as
// new and the ones it found duplicate, with the inbox's times. The inbox
// is the arbiter, so they are written whoever holds their keys. An error
// (Redis down, ErrBypassed) needs no action: the inbox's unique key still
// decides the next copy.
func (f *Front) Commit(ctx context.Context, committed ...Committed) error {
	if len(committed) == 0 {
		return nil
	}
	return f.call(ctx, func() error { return f.store.Record(ctx, committed...) })
}

// Release drops claims whose events the inbox could not store, so the
// sender's retry is claimed again at once. An error needs no action: an
// unreleased claim ends with its lease.
func (f *Front) Release(ctx context.Context, leases ...dedupe.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	return f.call(ctx, func() error { return f.store.Release(ctx, leases...) })
}

// call runs one call to Redis unless an outage bypasses it.
func (f *Front) call(ctx context.Context, send func() error) error {
	if !f.enter() {
		return ErrBypassed
	}
	err := send()
	f.done(ctx, err)
	return err
}

// enter reports whether a call may go to Redis: always while it answers;
// during an outage, one call at a time once RetryAfter has passed.
func (f *Front) enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.down {
		return true
	}
	if f.probing || f.now().Before(f.retryAt) {
		return false
	}
	f.probing = true
	return true
}

// done records how a call to Redis went. A failure begins an outage (or
// prolongs it); an answer ends it. A call whose caller gave up tells
// nothing about Redis.
func (f *Front) done(ctx context.Context, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probing = false
	now := f.now()
	switch {
	case err == nil:
		if f.down {
			f.down = false
			f.up.Set(1)
			f.logs.Info("redis front answers again", "down_for", now.Sub(f.downSince).Round(time.Millisecond))
		}
	case ctx.Err() != nil:
		// The caller gave up; Redis may be fine.
	default:
		f.failures.Inc()
		f.retryAt = now.Add(f.retryAfter)
		if !f.down {
			f.down, f.downSince = true, now
			f.up.Set(0)
			f.logs.Warn("redis front unavailable: the inbox decides alone until it answers", "err", err, "retry_after", f.retryAfter)
		}
	}
}

// Describe implements prometheus.Collector.
func (f *Front) Describe(ch chan<- *prometheus.Desc) {
	f.up.Describe(ch)
	f.failures.Describe(ch)
	f.bypassed.Describe(ch)
}

// Collect implements prometheus.Collector.
func (f *Front) Collect(ch chan<- prometheus.Metric) {
	f.up.Collect(ch)
	f.failures.Collect(ch)
	f.bypassed.Collect(ch)
}
