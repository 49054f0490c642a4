package reconcile

import "github.com/prometheus/client_golang/prometheus"

// Outcomes of a listed event, the outcome label of
// hookgate_reconcile_events_total.
const (
	OutcomeListed    = "listed"
	OutcomeHad       = "already_had"
	OutcomeRecovered = "recovered"
	OutcomeFailed    = "failed"
)

// Results of a run, the result label of hookgate_reconcile_runs_total.
const (
	ResultCompleted = "completed"
	ResultFailed    = "failed"
)

// Metrics are the reconciliation's metrics.
type Metrics struct {
	// Events is hookgate_reconcile_events_total{source,outcome}, outcome
	// one of the Outcome* constants.
	Events *prometheus.CounterVec
	// Runs is hookgate_reconcile_runs_total{source,result}, result one
	// of the Result* constants.
	Runs *prometheus.CounterVec
	// LastCompleted is hookgate_reconcile_last_completed_timestamp_seconds{source}:
	// when the source's last complete run started, its checkpoint.
	LastCompleted *prometheus.GaugeVec
}

// NewMetrics registers the reconciliation's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookgate_reconcile_events_total",
			Help: "Events a reconciliation listed, by source and outcome (listed, already_had, recovered, failed).",
		}, []string{"source", "outcome"}),
		Runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookgate_reconcile_runs_total",
			Help: "Reconciliation runs that ended, by source and result (completed, failed).",
		}, []string{"source", "result"}),
		LastCompleted: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hookgate_reconcile_last_completed_timestamp_seconds",
			Help: "When the source's last complete reconciliation run started: its checkpoint.",
		}, []string{"source"}),
	}
	reg.MustRegister(m.Events, m.Runs, m.LastCompleted)
	return m
}
