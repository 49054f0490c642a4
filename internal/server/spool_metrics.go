package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookgate/hookgate/internal/spool"
)

// spoolCollector reports the node's spool on each scrape:
//
//	hookgate_spool_waiting             events spooled and not drained yet
//	hookgate_spool_oldest_age_seconds  age of the oldest of them (0: none)
//	hookgate_spool_drained             events drained and still kept
//	hookgate_spool_duplicates          of those, found in the database at drain
//	hookgate_spool_quarantined         events that cannot be decoded, set aside
type spoolCollector struct {
	sp                                           *spool.Spool
	waiting, oldest, drained, dupes, quarantined *prometheus.Desc
}

func newSpoolCollector(sp *spool.Spool) *spoolCollector {
	return &spoolCollector{
		sp:      sp,
		waiting: prometheus.NewDesc("hookgate_spool_waiting", "Events in this node's spool not drained into the database yet.", nil, nil),
		oldest:  prometheus.NewDesc("hookgate_spool_oldest_age_seconds", "Age of the oldest event waiting in this node's spool (0 when none waits).", nil, nil),
		drained: prometheus.NewDesc("hookgate_spool_drained", "Events drained from this node's spool into the database, kept for their window.", nil, nil),
		dupes:   prometheus.NewDesc("hookgate_spool_duplicates", "Drained events the database already held (not processed again).", nil, nil),
		quarantined: prometheus.NewDesc("hookgate_spool_quarantined",
			"Spooled events that cannot be decoded, kept aside and not drained: each needs an operator (hookgate reconcile lists them).", nil, nil),
	}
}

func (c *spoolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.waiting
	ch <- c.oldest
	ch <- c.drained
	ch <- c.dupes
	ch <- c.quarantined
}

func (c *spoolCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.sp.Stats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.waiting, err)
		return
	}
	age := 0.0
	if !st.OldestWaiting.IsZero() {
		age = time.Since(st.OldestWaiting).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(st.Waiting))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(c.drained, prometheus.GaugeValue, float64(st.Drained))
	ch <- prometheus.MustNewConstMetric(c.dupes, prometheus.GaugeValue, float64(st.Duplicates))
	ch <- prometheus.MustNewConstMetric(c.quarantined, prometheus.GaugeValue, float64(st.Quarantined))
}
