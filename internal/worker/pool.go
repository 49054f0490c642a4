package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/lograte"
	"github.com/hookgate/hookgate/internal/wait"
)

// Defaults of Options and of a Destination: the configuration's, so that
// a pool built in code behaves as one built from a file that sets none.
const (
	// DefaultWorkers is how many workers lease events.
	DefaultWorkers = config.DefaultWorkers
	// DefaultBatch is how many events a worker leases at a time.
	DefaultBatch = config.DefaultBatch
	// DefaultLease is how long a worker holds a batch.
	DefaultLease = time.Duration(config.DefaultLease)
	// DefaultIdle is how long an idle worker waits before looking again.
	DefaultIdle = time.Second
	// DefaultGather is how far apart the leases that follow a batch short
	// of full are: at 1,000 events/s a batch gathers some 25 events
	// instead of one intake commit's 3 to 8, for about 12 ms more
	// latency to the destination (docs/benchmarks.md).
	DefaultGather = 25 * time.Millisecond
	// DefaultBackoffBase is the ceiling of the first retry's delay.
	DefaultBackoffBase = time.Duration(config.DefaultRetryInitial)
	// DefaultBackoffMax caps every retry's delay.
	DefaultBackoffMax = time.Duration(config.DefaultRetryMaxDelay)
	// DefaultMaxAttempts is a destination's attempts when it sets none.
	DefaultMaxAttempts = config.DefaultMaxAttempts
	// DefaultMaxInFlight bounds a destination's deliveries in flight
	// across the pool when it sets no bound.
	DefaultMaxInFlight = config.DefaultMaxInFlight
	// DefaultPauseFor is how long a paused destination waits before it is
	// probed, when it sets no time.
	DefaultPauseFor = time.Duration(config.DefaultPauseFor)
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
	// Sender makes its attempts; nil means the pool's Client posting to
	// Destination (HTTP). A broker's is opened by deliver.Open.
	Sender deliver.Sender
	// On is OnEvent (also when empty), OnTransition or OnAll. A stale
	// event (older than the entity's state) goes only to OnAll
	// destinations.
	On string
	// Types, when set, limits the destination to events whose Type
	// matches one of these path.Match patterns.
	Types []string
	// MaxAttempts is how many failed attempts to this destination make
	// the event dead; zero means DefaultMaxAttempts.
	MaxAttempts int
	// RetryInitial and RetryMaxDelay shape the delay before a retry:
	// exponential with full jitter from RetryInitial, at least the
	// destination's Retry-After, never more than RetryMaxDelay. Zero
	// means the pool's BackoffBase and BackoffMax.
	RetryInitial, RetryMaxDelay time.Duration
	// MaxInFlight bounds this destination's deliveries (its batches,
	// with BatchMax) in flight across all the pool's workers; zero means
	// DefaultMaxInFlight.
	MaxInFlight int
	// PauseAfter is how many failed attempts in a row (timeouts, 5xx,
	// 429, connection errors; not refusals) pause the destination: for
	// PauseFor (zero means DefaultPauseFor) no delivery to it is made,
	// then one probes it. Zero never pauses it.
	PauseAfter int
	PauseFor   time.Duration
	// Order is OrderEntity to deliver the events of one key one at a
	// time, in entity version order (inbox id for ties), on every node
	// that shares the store; "" delivers them in parallel. The store must
	// be an inbox.OrderedDispatcher.
	Order string
	// OrderKey, a selector (json:PATH, header:NAME, const:VALUE), chooses
	// the key of Order within the event's tenant; "" (or a selector that
	// finds nothing) keys by the entity, or by the event for one without.
	OrderKey string
	// OnExhausted is OnExhaustedSkip (also when empty) or
	// OnExhaustedBlock: what an ordered key does when one of its
	// deliveries fails for good.
	OnExhausted string
	// Rate, when set, limits the deliveries to this destination, from
	// every node that shares the store together; the store must be an
	// inbox.RatedDispatcher.
	Rate inbox.Rate
	// BatchMax, when more than zero, makes each attempt carry up to
	// BatchMax events (the Sender must be a deliver.BatchSender), and
	// MaxInFlight count batches. A batch goes when it is full, or when
	// the oldest event gathered has waited BatchWait (zero: it goes with
	// what is due at once).
	BatchMax  int
	BatchWait time.Duration
}

// wants reports whether d is for an event of type typ applied as a.
func (d Destination) wants(typ string, a inbox.Applied) bool {
	if len(d.Types) > 0 && !slices.ContainsFunc(d.Types, func(p string) bool {
		ok, _ := path.Match(p, typ)
		return ok
	}) {
		return false
	}
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
	// reason is one of metrics.DeadInvalid, DeadDelivery, DeadPanic.
	Dead(source, reason string)
	// Lost reports n results (of what: "event" or "delivery") that were
	// not recorded because their lease had passed to another owner.
	Lost(what string, n int)
}

// Options configure a Pool. Zero values mean the defaults.
type Options struct {
	// Store is the inbox; required.
	Store inbox.Store
	// Sources by name. An event of a source not listed dies as invalid.
	Sources map[string]Source
	// Workers and Batch: how many workers (default DefaultWorkers),
	// leasing how many events each (default DefaultBatch).
	Workers, Batch int
	// Lease is how long a batch of events, or one delivery, is held
	// before another worker may take it over (after a crash). It must
	// exceed every destination's Timeout, with room to record the
	// attempt.
	Lease time.Duration
	// Idle is how long a worker or a destination's dispatcher with
	// nothing due waits before looking again, unless Notify wakes it (as
	// a store that is an inbox.Watcher does when any node stores events).
	Idle time.Duration
	// Gather spaces the leases that follow a batch short of full, across
	// the pool's workers: a worker woken then leases no sooner than
	// Gather after the last such lease. Under a trickle of small intake
	// commits a batch then takes what arrived over Gather, rather than
	// each commit costing a lease, an apply and a finish, and each lane a
	// dispatch, of its own. Zero means DefaultGather; a backlog (full
	// batches) is never held back.
	Gather time.Duration
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
	// Logger receives batch errors, recovered panics, dead events, lost
	// leases and destination state changes; nil discards.
	Logger *slog.Logger
	// Observer hears about deliveries and deaths; nil means nobody.
	Observer Observer
}

// ErrNoStore is returned by New for options without a store.
var ErrNoStore = errors.New("worker: no store")

// Pool is a set of workers, which lease and apply batches of events, and
// one dispatcher per lane (a destination of a source), which delivers.
type Pool struct {
	opts Options
	wake chan struct{}
	// backlog wakes a worker for the rest of a backlog: another worker
	// leased a full batch. Its lease is not paced (see Gather).
	backlog chan struct{}
	name    string
	logs    *lograte.Logger
	// lanes by source and destination, and in a stable order.
	lanes map[inbox.Lane]*lane
	order []*lane

	// mu guards next: the earliest time, on the monotonic clock, at which
	// a worker woken after a short batch leases again (see Gather).
	mu   sync.Mutex
	next time.Time
}

// New returns a pool; Run starts it.
func New(opts Options) (*Pool, error) {
	if opts.Store == nil {
		return nil, ErrNoStore
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Batch <= 0 {
		opts.Batch = DefaultBatch
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Idle <= 0 {
		opts.Idle = DefaultIdle
	}
	if opts.Gather <= 0 {
		opts.Gather = DefaultGather
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
	host, _ := os.Hostname()
	p := &Pool{
		opts:    opts,
		wake:    make(chan struct{}, opts.Workers),
		backlog: make(chan struct{}, opts.Workers),
		name:    fmt.Sprintf("%s:%d:%x", host, os.Getpid(), rand.Uint32()),
		logs:    lograte.New(opts.Logger),
		lanes:   map[inbox.Lane]*lane{},
	}
	names := slices.Sorted(maps.Keys(opts.Sources))
	for _, name := range names {
		for _, d := range opts.Sources[name].Destinations {
			l, err := newLane(p, name, d)
			if err != nil {
				return nil, err
			}
			p.lanes[l.key] = l
			p.order = append(p.order, l)
		}
	}
	return p, nil
}

type nopObserver struct{}

func (nopObserver) Delivered(string, string, string, time.Duration) {}
func (nopObserver) Dead(string, string)                             {}
func (nopObserver) Lost(string, int)                                {}

// Notify wakes one idle worker: new events were stored. A commit at
// intake holds a few events, which one worker's batch takes; a worker that
// leases a full batch wakes the next, so a backlog still reaches every
// worker. It never blocks.
func (p *Pool) Notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run runs the workers and the lanes' dispatchers until ctx ends. Then
// no batch or delivery is leased any more; a worker finishes the batch it
// holds, and each delivery in flight ends (within its destination's
// timeout) and is recorded, so Run returns once everything leased has its
// outcome. A delivery whose outcome could not be recorded is made again
// after its lease, under the same webhook-id.
func (p *Pool) Run(ctx context.Context) error {
	p.restoreLanes(ctx)
	var wg sync.WaitGroup
	for i := range p.opts.Workers {
		owner := fmt.Sprintf("%s:%d", p.name, i)
		wg.Go(func() { p.loop(ctx, owner) })
	}
	for _, l := range p.order {
		wg.Go(func() { l.run(ctx) })
	}
	if w, ok := p.opts.Store.(inbox.Watcher); ok {
		wg.Go(func() { w.Watch(ctx, p.Notify) })
	}
	wg.Wait()
	return nil
}

// restoreLanes takes up the lane states recorded before, so that a
// destination paused before a restart stays paused until its time.
func (p *Pool) restoreLanes(ctx context.Context) {
	if len(p.lanes) == 0 {
		return
	}
	st, err := p.opts.Store.Stats(ctx)
	if err != nil {
		p.opts.Logger.Warn("reading destination states; starting them healthy", "err", err)
		return
	}
	for _, ls := range st.Lanes {
		if l := p.lanes[ls.Lane]; l != nil && ls.State != "" {
			l.restore(ls)
		}
	}
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
		// A batch short of full took every event due then: those stored
		// since woke a worker (Notify), and a lease now would mostly find
		// none, a write transaction for nothing.
		if n == p.opts.Batch && err == nil {
			continue
		}
		idle.Reset(p.opts.Idle)
		select {
		case <-ctx.Done():
			return
		case <-p.backlog:
			continue
		case <-p.wake:
		case <-idle.C:
		}
		if wait.Sleep(ctx, p.pace()) != nil {
			return
		}
	}
}

// pace takes the next lease slot of a worker woken after a short batch,
// Gather after the last one taken, and says how long to wait for it.
// time.Now, not Options.Now: the slots are real time, whatever clock the
// pool's records use.
func (p *Pool) pace() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	slot := now
	if p.next.After(now) {
		slot = p.next
	}
	p.next = slot.Add(p.opts.Gather)
	return slot.Sub(now)
}

// Round is what one ProcessOnce did.
type Round struct {
	// Events leased, validated, applied and finished.
	Events int
	// Deliveries attempted (and recorded).
	Deliveries int
}

// ProcessOnce processes one batch of events, then makes one pass over
// every lane (the deliveries due now, up to each destination's
// max_in_flight at once), all in the calling goroutine's time.
func (p *Pool) ProcessOnce(ctx context.Context) (Round, error) {
	var r Round
	n, err := p.process(ctx, p.name+":once")
	if err != nil {
		return r, err
	}
	r.Events = n
	for _, l := range p.order {
		n, err := l.round(ctx)
		r.Deliveries += n
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

// wakeLanes wakes the dispatchers of src's destinations in names.
func (p *Pool) wakeLanes(src string, names []string) {
	for _, name := range names {
		if l := p.lanes[inbox.Lane{Source: src, Destination: name}]; l != nil {
			l.notify()
		}
	}
}

// died reports an event whose dead outcome is recorded: the observer
// counts it, the log says which event and why.
func (p *Pool) died(id int64, source, reason, msg string) {
	p.observe(func() { p.opts.Observer.Dead(source, reason) })
	p.logs.Info("event dead", "event", id, "source", source, "reason", reason, "error", msg)
}

// lost reports results that were not recorded because their lease had
// passed to another owner: that owner's outcome stands.
func (p *Pool) lost(what string, ids []int64) {
	p.observe(func() { p.opts.Observer.Lost(what, len(ids)) })
	p.logs.Warn("lease lost before recording; the new owner's outcome stands", "what", what, "events", ids)
}

// laneChanged records and logs a lane's new state.
func (p *Pool) laneChanged(ctx context.Context, key inbox.Lane, was string, c circuit) {
	st := inbox.LaneState{Lane: key, State: c.state, Failures: c.failures, Until: c.until, LastError: c.lastErr, Changed: c.changed}
	if err := p.opts.Store.SetLaneState(ctx, st); err != nil {
		p.logs.Error("recording destination state", "source", key.Source, "destination", key.Destination, "err", err)
	}
	args := []any{"source", key.Source, "destination", key.Destination, "from", was, "to", c.state, "failures", c.failures}
	if c.state == inbox.LanePaused {
		args = append(args, "until", c.until)
	}
	if c.state != inbox.LaneHealthy {
		args = append(args, "last_error", c.lastErr)
	}
	p.logs.Info("destination state", args...)
}
