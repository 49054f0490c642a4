package alert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/notify"
)

// Source is the internal source whose events are the webhook channels'
// notifications; its destinations are those channels. Configured sources
// may not take the name.
const Source = config.AlertSource

// webhookChannel is the channel name of a webhook notice: one event of
// [Source], which the worker delivers to every webhook channel that
// wants its kind.
const webhookChannel = "webhook"

// checkTimeout bounds one check's reads and writes.
const checkTimeout = 10 * time.Second

// Sender sends one message on one channel (Slack, e-mail).
type Sender interface {
	Send(ctx context.Context, m notify.Message) error
}

// Local is what a node sees on its own, beside the store.
type Local struct {
	// Refused returns how many requests of source this node has refused
	// (a bad signature, timestamp or token) since it started.
	Refused func(source string) int64
	// Spool returns how many events wait in the node's spool and how
	// many are quarantined; nil without a spool.
	Spool func() (waiting, quarantined int)
}

// Options configure an Engine.
type Options struct {
	// Store is the inbox: its stats, and where webhook notices go.
	Store inbox.Store
	// Incidents are the store's incidents.
	Incidents inbox.Incidents
	Alerts    config.Alerts
	Sources   []config.Source
	// Senders send the slack and email channels, by channel name.
	Senders map[string]Sender
	Local   Local
	// Registry, when set, gets hookgate_incidents_open and
	// hookgate_alerts_sent_total.
	Registry prometheus.Registerer
	Logger   *slog.Logger
	Now      func() time.Time
	// Owner names this node in notice leases.
	Owner string
	// SendEvery is how often queued notices are looked for; zero: every
	// second.
	SendEvery time.Duration
}

// Engine checks the conditions every alerts.check_every and sends the
// queued notices.
type Engine struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time

	open *prometheus.GaugeVec
	sent *prometheus.CounterVec

	// What this node has seen, by source: the accepted counter and when
	// it last moved, the dead count, and refused-request samples.
	accepted map[string]counterSeen
	dead     map[string]int64
	refused  map[string][]sample
	// spoolSince is when the spool was first seen holding events, zero
	// while it is empty.
	spoolSince time.Time
	// down is the store's outage as this node sees it.
	down *outage
	// wake asks the sender to look for notices now.
	wake chan struct{}
}

// counterSeen is a counter as the node last read it: moved is when it
// last changed, or, with first, when the node first read it.
type counterSeen struct {
	n     int64
	moved time.Time
	first bool
}

type sample struct {
	at time.Time
	n  int64
}

// New returns an engine; Run starts it.
func New(opts Options) (*Engine, error) {
	if opts.Store == nil || opts.Incidents == nil {
		return nil, errors.New("alert: a store with incidents is required")
	}
	e := &Engine{opts: opts, log: opts.Logger, now: opts.Now,
		accepted: map[string]counterSeen{}, dead: map[string]int64{}, refused: map[string][]sample{},
		wake: make(chan struct{}, 1)}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.opts.SendEvery <= 0 {
		e.opts.SendEvery = time.Second
	}
	e.open = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hookgate_incidents_open",
		Help: "Open incidents, by kind.",
	}, []string{"kind"})
	for _, k := range config.IncidentKinds {
		e.open.WithLabelValues(k)
	}
	e.sent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookgate_alerts_sent_total",
		Help: "Notifications sent, by channel and result (sent, retry, failed).",
	}, []string{"channel", "result"})
	if opts.Registry != nil {
		if err := opts.Registry.Register(e.open); err != nil {
			return nil, fmt.Errorf("alert: %w", err)
		}
		if err := opts.Registry.Register(e.sent); err != nil {
			return nil, fmt.Errorf("alert: %w", err)
		}
	}
	return e, nil
}

// Run checks and sends until ctx ends.
func (e *Engine) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.sendLoop(ctx)
	}()
	tick := time.NewTicker(time.Duration(e.opts.Alerts.CheckEvery))
	defer tick.Stop()
	for {
		e.Check(ctx)
		select {
		case <-ctx.Done():
			<-done
			return
		case <-tick.C:
		}
	}
}

// Check checks every condition once: it opens, refreshes, resolves and
// reminds incidents, and queues their notices.
func (e *Engine) Check(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, checkTimeout)
	defer cancel()
	now := e.now()
	// The open incidents are read before the state they are judged by:
	// an incident another node opens after this read is left to the next
	// check, rather than resolved by state read before it was opened
	// (a lane this node's stats do not have yet); and one another node
	// ends after this read is not opened again by state that may be
	// older than the ending (attempts read before the success that ended
	// it).
	open, openErr := e.opts.Incidents.ListIncidents(ctx, false, maxOpen)
	stats, err := e.opts.Store.Stats(ctx)
	if err != nil {
		if parent.Err() == nil {
			e.storeDown(parent, now, err)
		}
		return
	}
	e.storeUp(parent, now)
	if openErr != nil {
		e.log.Error("alerts: reading incidents", "err", openErr)
		return
	}
	byKey := make(map[key]inbox.Incident, len(open))
	for _, inc := range open {
		byKey[keyOf(inc)] = inc
	}
	seen := map[key]bool{}
	for _, c := range e.conditions(ctx, stats, now, byKey) {
		k := c.key()
		seen[k] = true
		inc := inbox.Incident{Kind: c.kind, Source: c.source, Destination: c.destination, SeenAt: now,
			Counts: c.counts, LastError: redact(c.lastError)}
		if known, ok := byKey[k]; ok {
			inc.ID = known.ID
			still, err := e.opts.Incidents.See(ctx, inc)
			if err != nil {
				e.log.Error("alerts: recording an incident", "kind", c.kind, "err", err)
			} else if !still {
				delete(byKey, k)
			}
			continue
		}
		got, opened, err := e.opts.Incidents.Observe(ctx, inc, e.notices(notify.Opened))
		if err != nil {
			e.log.Error("alerts: recording an incident", "kind", c.kind, "err", err)
			continue
		}
		if opened {
			e.log.Warn("incident opened", "kind", got.Kind, "source", got.Source, "destination", got.Destination, "id", got.ID)
			e.kick()
		}
		byKey[k] = got
	}
	for k, inc := range byKey {
		if seen[k] || !e.ended(inc, stats, now) {
			continue
		}
		counts := e.endCounts(inc, stats)
		ok, err := e.opts.Incidents.Resolve(ctx, inc.ID, now, counts, e.notices(notify.Resolved))
		if err != nil {
			e.log.Error("alerts: resolving an incident", "id", inc.ID, "err", err)
			continue
		}
		if ok {
			e.log.Info("incident resolved", "kind", inc.Kind, "source", inc.Source, "destination", inc.Destination, "id", inc.ID,
				"after", now.Sub(inc.OpenedAt).Round(time.Second))
			e.kick()
		}
		delete(byKey, k)
	}
	repeat := time.Duration(e.opts.Alerts.Repeat)
	count := map[string]float64{}
	for _, inc := range byKey {
		count[inc.Kind]++
		ok, err := e.opts.Incidents.Remind(ctx, inc.ID, now.Add(-repeat), now, e.notices(notify.Reminder))
		if err != nil {
			e.log.Error("alerts: reminding of an incident", "id", inc.ID, "err", err)
		} else if ok {
			e.kick()
		}
	}
	for _, k := range config.IncidentKinds {
		e.open.WithLabelValues(k).Set(count[k])
	}
}

// maxOpen bounds the open incidents one check reads: more than a gateway
// with every lane failing has.
const maxOpen = 10000

// kick wakes the sender.
func (e *Engine) kick() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// key is an incident's key.
type key struct{ kind, source, destination string }

func keyOf(inc inbox.Incident) key { return key{inc.Kind, inc.Source, inc.Destination} }

// condition is a condition that holds now.
type condition struct {
	kind, source, destination string
	counts                    map[string]int64
	lastError                 string
}

func (c condition) key() key { return key{c.kind, c.source, c.destination} }

// merge returns the stored counts with c's over them.
func merge(stored, c map[string]int64) map[string]int64 {
	out := maps.Clone(stored)
	if out == nil {
		out = map[string]int64{}
	}
	maps.Copy(out, c)
	return out
}
