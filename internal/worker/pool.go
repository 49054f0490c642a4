package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
)

// Defaults of Options.
const (
	// DefaultLease is how long a worker holds a batch.
	DefaultLease = time.Minute
	// DefaultIdle is how long an idle worker waits before looking again.
	DefaultIdle = time.Second
	// DefaultBackoffBase is the ceiling of the first retry's delay.
	DefaultBackoffBase = time.Second
	// DefaultBackoffMax caps every retry's delay.
	DefaultBackoffMax = time.Hour
	// DefaultMaxAttempts is a destination's attempts when it sets none.
	DefaultMaxAttempts = 20
	// DefaultMaxInFlight bounds a destination's deliveries in flight
	// across the pool when it sets no bound.
	DefaultMaxInFlight = 16
)

// On values of a destination.
const (
	// OnEvent: the destination gets every event of its source.
	OnEvent = "event"
	// OnTransition: it gets only the events that changed their entity's
	// state.
	OnTransition = "transition"
	// OnAll: it gets every event, stale ones included (an audit sink).
	OnAll = "all"
)

// Destination is a destination with its processing policy.
type Destination struct {
	deliver.Destination
	// On is OnEvent (also when empty), OnTransition or OnAll. A stale
	// event (older than the entity's state) goes only to OnAll
	// destinations.
	On string
	// MaxAttempts is how many failed attempts to this destination make
	// the event dead; zero means DefaultMaxAttempts.
	MaxAttempts int
	// RetryInitial and RetryMaxDelay shape the delay before a retry:
	// exponential with full jitter from RetryInitial, at least the
	// destination's Retry-After, never more than RetryMaxDelay. Zero
	// means the pool's BackoffBase and BackoffMax.
	RetryInitial, RetryMaxDelay time.Duration
	// MaxInFlight bounds this destination's deliveries in flight across
	// all the pool's workers; zero means DefaultMaxInFlight.
	MaxInFlight int
}

// wants reports whether d is for an event applied as a.
func (d Destination) wants(a inbox.Applied) bool {
	switch {
	case d.On == OnAll:
		return true
	case a.Outcome == inbox.ApplyStale:
		return false
	case d.On == OnTransition:
		return a.Transition
	}
	return true
}

// Source is what processing needs of a configured source.
type Source struct {
	// Name is the source's name, as stored on its events.
	Name string
	// Schema validates payloads; nil: no validation.
	Schema *jsonschema.Schema
	// Destinations get the source's events; names are unique.
	Destinations []Destination
}

// Observer hears about deliveries and dead events (the metrics).
// *metrics.Metrics implements it.
type Observer interface {
	// Delivered reports one delivery attempt that took d; outcome is one
	// of metrics.DeliveryDelivered, DeliveryRetry, DeliveryDead.
	Delivered(source, destination, outcome string, d time.Duration)
	// Dead reports an event that died, once its outcome is recorded;
	// reason is one of metrics.DeadInvalid, DeadDelivery, DeadAttempts,
	// DeadPanic.
	Dead(source, reason string)
}

// Options configure a Pool. Zero values mean the defaults.
type Options struct {
	// Store is the inbox; required.
	Store inbox.Store
	// Sources by name. An event of a source not listed dies as invalid.
	Sources map[string]Source
	// Workers and Batch: how many workers (default 1), leasing how many
	// events each (default 200).
	Workers, Batch int
	// Lease is how long a batch is held before another worker may take
	// it over (after a crash).
	Lease time.Duration
	// Idle is how long a worker with nothing due waits before looking
	// again, unless Notify wakes it.
	Idle time.Duration
	// Client makes the deliveries; nil means deliver.New(nil).
	Client *deliver.Client
	// BackoffBase and BackoffMax bound the delay before a retry (see
	// deliver.Backoff).
	BackoffBase, BackoffMax time.Duration
	// Now is the clock of retry times; nil means time.Now.
	Now func() time.Time
	// Rand returns a number in [0, 1) for backoff jitter; nil means
	// math/rand/v2.Float64.
	Rand func() float64
	// Logger receives batch errors and recovered panics; nil discards.
	Logger *slog.Logger
	// Observer hears about deliveries and deaths; nil means nobody.
	Observer Observer
}

// ErrNoStore is returned by New for options without a store.
var ErrNoStore = errors.New("worker: no store")

// Pool is a set of workers.
type Pool struct {
	opts Options
	wake chan struct{}
	name string
	// slots bounds each destination's deliveries in flight, by source
	// and destination name, across the pool's workers: a slow
	// destination fills its own slots only.
	slots map[[2]string]chan struct{}
}

// New returns a pool; Run starts it.
func New(opts Options) (*Pool, error) {
	if opts.Store == nil {
		return nil, ErrNoStore
	}
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.Batch <= 0 {
		opts.Batch = 200
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Idle <= 0 {
		opts.Idle = DefaultIdle
	}
	if opts.Client == nil {
		opts.Client = deliver.New(nil)
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = DefaultBackoffBase
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = DefaultBackoffMax
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	slots := map[[2]string]chan struct{}{}
	for _, src := range opts.Sources {
		for _, d := range src.Destinations {
			n := d.MaxInFlight
			if n <= 0 {
				n = DefaultMaxInFlight
			}
			slots[[2]string{src.Name, d.Name}] = make(chan struct{}, n)
		}
	}
	host, _ := os.Hostname()
	return &Pool{
		opts:  opts,
		wake:  make(chan struct{}, opts.Workers),
		name:  fmt.Sprintf("%s:%d:%x", host, os.Getpid(), rand.Uint32()),
		slots: slots,
	}, nil
}

type nopObserver struct{}

func (nopObserver) Delivered(string, string, string, time.Duration) {}
func (nopObserver) Dead(string, string)                             {}

// Notify wakes idle workers: new events were stored. It never blocks.
func (p *Pool) Notify() {
	for range p.opts.Workers {
		select {
		case p.wake <- struct{}{}:
		default:
			return
		}
	}
}

// Run runs the workers until ctx ends. A worker finishes the batch it
// holds (its deliveries and its outcomes) before it stops, so Run returns
// once every leased event has its outcome recorded. A batch that fails is
// logged and retried after Idle.
func (p *Pool) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for i := range p.opts.Workers {
		owner := fmt.Sprintf("%s:%d", p.name, i)
		wg.Go(func() { p.loop(ctx, owner) })
	}
	wg.Wait()
	return nil
}

func (p *Pool) loop(ctx context.Context, owner string) {
	idle := time.NewTimer(0)
	defer idle.Stop()
	for {
		n, err := p.process(ctx, owner)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			p.opts.Logger.Error("processing batch", "worker", owner, "err", err)
		}
		if n > 0 && err == nil {
			continue
		}
		idle.Reset(p.opts.Idle)
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-idle.C:
		}
	}
}

// ProcessOnce processes one batch in the calling goroutine and reports how
// many events it leased.
func (p *Pool) ProcessOnce(ctx context.Context) (int, error) {
	return p.process(ctx, p.name+":once")
}
