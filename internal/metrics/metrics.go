package metrics

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/hookgate/hookgate/internal/inbox"
)

// Outcomes of an intake request, the outcome label of
// hookgate_events_received_total.
const (
	ReceivedAccepted        = "accepted"
	ReceivedDuplicate       = "duplicate"
	ReceivedUnauthenticated = "unauthenticated"
	ReceivedInvalid         = "invalid"
	ReceivedStoreError      = "store_error"
)

// Reasons a request was answered 503 before it was authenticated, the
// reason label of hookgate_busy_total.
const (
	// BusyConnections: the listener had limits.max_connections open.
	BusyConnections = "connections"
	// BusyPendingBody: the bodies awaiting authentication held
	// limits.max_pending_body.
	BusyPendingBody = "pending_body"
	// BusyNotReady: /readyz answered 503 (the store does not answer, or
	// its last write failed).
	BusyNotReady = "not_ready"
)

// Outcomes of a delivery attempt, the outcome label of
// hookgate_deliveries_total.
const (
	DeliveryDelivered = "delivered"
	DeliveryRetry     = "retry"
	DeliveryDead      = "dead"
)

// Reasons an event died, the reason label of hookgate_dead_events_total.
const (
	// DeadInvalid: the payload failed its source's schema.
	DeadInvalid = "invalid"
	// DeadDelivery: a destination failed it for good: it refused it (a
	// 4xx, a redirect) or ran out of attempts. Which one is in the
	// event's error and in hookgate_deliveries_total.
	DeadDelivery = "delivery"
	// DeadPanic: processing it panicked.
	DeadPanic = "panic"
)

// StatsTimeout bounds how long a scrape waits for the inbox's stats.
const StatsTimeout = 2 * time.Second

// Metrics are hookgate's metrics on their own registry.
type Metrics struct {
	// Registry holds every metric below, the inbox gauges, and the Go
	// runtime and process collectors.
	Registry *prometheus.Registry
	// Received is hookgate_events_received_total{source,outcome}, outcome
	// one of the Received* constants.
	Received *prometheus.CounterVec
	// Verified is hookgate_verified_total{source,secret}: requests
	// authenticated, by the index in the source's secret list ("0", "1",
	// ...) of the secret that verified them, so that an operator rotating
	// a secret sees when the old one is no longer used. Intake exports
	// every index of every source from the start, at 0.
	Verified *prometheus.CounterVec
	// Busy is hookgate_busy_total{reason}: requests answered 503 before
	// authentication, by the Busy* constant that says which limit fired.
	// Every reason is exported from the start, at 0.
	Busy *prometheus.CounterVec
	// IdleClosed is hookgate_idle_connections_closed_total: idle
	// connections the intake listener closed, at limits.max_connections,
	// to make room for a new one.
	IdleClosed prometheus.Counter
	// SlowClosed is hookgate_slow_bodies_closed_total: connections the
	// intake listener closed, at limits.max_connections with none idle,
	// because their request body arrived slower than limits.min_body_rate.
	SlowClosed prometheus.Counter
	// DedupeSeconds is hookgate_dedupe_seconds: the time from submitting
	// an event to the committer to its dedupe decision.
	DedupeSeconds prometheus.Histogram
	// Deliveries is hookgate_deliveries_total{source,destination,outcome},
	// outcome one of the Delivery* constants.
	Deliveries *prometheus.CounterVec
	// DeliverySeconds is hookgate_delivery_seconds{destination}: the time
	// of one delivery attempt.
	DeliverySeconds *prometheus.HistogramVec
	// DeadEvents is hookgate_dead_events_total{source,reason}, reason one
	// of the Dead* constants. (The method Dead counts into it.)
	DeadEvents *prometheus.CounterVec
	// LeasesLost is hookgate_leases_lost_total{what}: results (of an
	// "event" batch or a "delivery") not recorded because their lease
	// had passed to another owner.
	LeasesLost *prometheus.CounterVec

	inbox *inboxCollector
}

// New returns the metrics, registered on a new registry.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookgate_events_received_total",
			Help: "Events received by intake, by source and outcome (accepted, duplicate, unauthenticated, invalid, store_error).",
		}, []string{"source", "outcome"}),
		Verified: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookgate_verified_total",
			Help: "Requests authenticated, by source and by the index in its secret list of the secret that verified them.",
		}, []string{"source", "secret"}),
		Busy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookgate_busy_total",
			Help: "Requests answered 503 before authentication, by reason (connections, pending_body, not_ready).",
		}, []string{"reason"}),
		IdleClosed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookgate_idle_connections_closed_total",
			Help: "Idle connections the intake listener closed at limits.max_connections to make room for a new one.",
		}),
		SlowClosed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookgate_slow_bodies_closed_total",
			Help: "Connections the intake listener closed at limits.max_connections because their request body arrived slower than limits.min_body_rate.",
		}),
		DedupeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hookgate_dedupe_seconds",
			Help: "Time from submitting an event to the committer to its dedupe decision.",
			// 0.25 ms to about 4 s: a group commit waits for one fsync.
			Buckets: prometheus.ExponentialBuckets(0.00025, 2, 15),
		}),
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookgate_deliveries_total",
			Help: "Delivery attempts, by source, destination and outcome (delivered, retry, dead).",
		}, []string{"source", "destination", "outcome"}),
		DeliverySeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hookgate_delivery_seconds",
			Help: "Time of one delivery attempt, by destination.",
			// 5 ms to about 20 s: past the default delivery timeout of 10 s.
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 13),
		}, []string{"destination"}),
		DeadEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookgate_dead_events_total",
			Help: "Events that died, by source and reason (invalid, delivery, panic).",
		}, []string{"source", "reason"}),
		LeasesLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookgate_leases_lost_total",
			Help: "Results not recorded because their lease had passed to another owner, by what was leased (event, delivery).",
		}, []string{"what"}),
		inbox: newInboxCollector(),
	}
	for _, reason := range []string{BusyConnections, BusyPendingBody, BusyNotReady} {
		m.Busy.WithLabelValues(reason)
	}
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.Received, m.Verified, m.Busy, m.IdleClosed, m.SlowClosed, m.DedupeSeconds, m.Deliveries, m.DeliverySeconds, m.DeadEvents, m.LeasesLost,
		m.inbox,
	)
	return m
}

// Refused returns how many requests of source intake refused as
// unauthenticated (a bad signature, timestamp or token) since it started.
func (m *Metrics) Refused(source string) int64 {
	var out dto.Metric
	if err := m.Received.WithLabelValues(source, ReceivedUnauthenticated).Write(&out); err != nil {
		return 0
	}
	return int64(out.GetCounter().GetValue())
}

// Delivered counts one delivery attempt of an event of source to dest and
// times it; outcome is one of the Delivery* constants.
func (m *Metrics) Delivered(source, dest, outcome string, d time.Duration) {
	m.Deliveries.WithLabelValues(source, dest, outcome).Inc()
	m.DeliverySeconds.WithLabelValues(dest).Observe(d.Seconds())
}

// Dead counts one event of source that died; reason is one of the Dead*
// constants.
func (m *Metrics) Dead(source, reason string) {
	m.DeadEvents.WithLabelValues(source, reason).Inc()
}

// Lost counts n results of what ("event" or "delivery") whose lease was
// lost.
func (m *Metrics) Lost(what string, n int) {
	m.LeasesLost.WithLabelValues(what).Add(float64(n))
}

// WatchInbox makes every scrape read stats (bounded by [StatsTimeout]) for
// hookgate_inbox_pending and hookgate_inbox_oldest_pending_seconds. A later
// call replaces the earlier function. When stats fails, the scrape reports
// the error for these two gauges and still serves the rest.
func (m *Metrics) WatchInbox(stats func(context.Context) (inbox.Stats, error)) {
	m.inbox.mu.Lock()
	m.inbox.stats = stats
	m.inbox.mu.Unlock()
}

// Handler serves the registry in the Prometheus text formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{
		Registry:      m.Registry,
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// inboxCollector reads the inbox's stats at scrape time, so the gauges are
// never older than the scrape and no goroutine polls the store.
type inboxCollector struct {
	pending, oldest    *prometheus.Desc
	laneState, backlog *prometheus.Desc
	now                func() time.Time

	mu    sync.Mutex
	stats func(context.Context) (inbox.Stats, error)
}

func newInboxCollector() *inboxCollector {
	return &inboxCollector{
		pending: prometheus.NewDesc("hookgate_inbox_pending",
			"Events waiting to be processed or delivered (received, in retry or delivering).", nil, nil),
		oldest: prometheus.NewDesc("hookgate_inbox_oldest_pending_seconds",
			"Age of the oldest event waiting to be processed; 0 when none waits.", nil, nil),
		laneState: prometheus.NewDesc("hookgate_destination_state",
			"1 for the state (healthy, failing, paused) a source's destination is in, 0 for the others.",
			[]string{"source", "destination", "state"}, nil),
		backlog: prometheus.NewDesc("hookgate_destination_pending",
			"Deliveries to a source's destination not yet delivered or failed for good.",
			[]string{"source", "destination"}, nil),
		now: time.Now,
	}
}

// Describe implements prometheus.Collector.
func (c *inboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.oldest
	ch <- c.laneState
	ch <- c.backlog
}

// Collect implements prometheus.Collector.
func (c *inboxCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	stats := c.stats
	c.mu.Unlock()
	if stats == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), StatsTimeout)
	defer cancel()
	s, err := stats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.pending, err)
		ch <- prometheus.NewInvalidMetric(c.oldest, err)
		return
	}
	var age float64
	if !s.OldestPending.IsZero() {
		age = max(c.now().Sub(s.OldestPending).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
	for _, l := range s.Lanes {
		state := l.State
		if state == "" {
			state = inbox.LaneHealthy
		}
		for _, st := range []string{inbox.LaneHealthy, inbox.LaneFailing, inbox.LanePaused} {
			v := 0.0
			if st == state {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.laneState, prometheus.GaugeValue, v, l.Source, l.Destination, st)
		}
		ch <- prometheus.MustNewConstMetric(c.backlog, prometheus.GaugeValue, float64(l.Pending), l.Source, l.Destination)
	}
}
