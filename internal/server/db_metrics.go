package server

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookgate/hookgate/internal/inbox"
)

// pooledStore is a store that draws its connections from a pgx pool (the
// PostgreSQL inbox). Asked of the store as a capability, so that nothing
// here names the backend.
type pooledStore interface {
	Pool() *pgxpool.Pool
}

// dbCollector reports the node's database connection pool on each scrape:
//
//	hookgate_db_connections{state}         acquired, idle, constructing; max is pool_max_conns
//	hookgate_db_acquire_waits_total        acquires that found no idle connection and waited
//	hookgate_db_acquire_wait_seconds_total time those acquires waited
//	hookgate_db_acquire_canceled_total     acquires given up (their deadline passed) before a connection came
//
// Nodes × pool_max_conns must stay under the server's (or the pooler's)
// limit: acquired near max and a rising wait count say the pool is the
// bottleneck; a canceled acquire is a statement that failed for want of a
// connection (an intake write among them answers 503 + Retry-After).
type dbCollector struct {
	pool                           *pgxpool.Pool
	conns, waits, waited, canceled *prometheus.Desc
}

// registerDBCollector registers a dbCollector on reg when store has a pgx
// pool; a store without one (SQLite) gets nothing.
func registerDBCollector(reg prometheus.Registerer, store inbox.Backend) {
	ps, ok := store.(pooledStore)
	if !ok {
		return
	}
	reg.MustRegister(newDBCollector(ps.Pool()))
}

func newDBCollector(pool *pgxpool.Pool) *dbCollector {
	return &dbCollector{
		pool: pool,
		conns: prometheus.NewDesc("hookgate_db_connections",
			"Connections of this node's database pool by state: acquired, idle, constructing; max is the pool's size (pool_max_conns).",
			[]string{"state"}, nil),
		waits: prometheus.NewDesc("hookgate_db_acquire_waits_total",
			"Acquires of a database connection that found none idle and waited for one.", nil, nil),
		waited: prometheus.NewDesc("hookgate_db_acquire_wait_seconds_total",
			"Time acquires of a database connection spent waiting for one because none was idle.", nil, nil),
		canceled: prometheus.NewDesc("hookgate_db_acquire_canceled_total",
			"Acquires of a database connection given up before one came (their deadline passed): the pool was too small or the database too slow.", nil, nil),
	}
}

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.conns
	ch <- c.waits
	ch <- c.waited
	ch <- c.canceled
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.pool.Stat()
	for _, s := range []struct {
		state string
		n     int32
	}{
		{"acquired", st.AcquiredConns()},
		{"idle", st.IdleConns()},
		{"constructing", st.ConstructingConns()},
		{"max", st.MaxConns()},
	} {
		ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(s.n), s.state)
	}
	ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(st.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(c.waited, prometheus.CounterValue, st.EmptyAcquireWaitTime().Seconds())
	ch <- prometheus.MustNewConstMetric(c.canceled, prometheus.CounterValue, float64(st.CanceledAcquireCount()))
}
