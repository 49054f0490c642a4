// Package metrics holds hookgate's Prometheus metrics.
//
// [New] builds every metric on its own registry, with the Go runtime and
// process collectors, and [Metrics.Handler] serves them at /metrics. Intake
// counts received events, the 503s it answers before authentication (and
// the server those of its connection limit) and times the dedupe decision
// through the exported fields; a [Metrics] is also the worker pool's observer ([Metrics.Delivered],
// [Metrics.Dead]); [Metrics.WatchInbox] reports the inbox depth and the age of
// its oldest pending event, read at scrape time.
//
// The metrics:
//
//	hookgate_events_received_total{source,outcome}          counter
//	hookgate_busy_total{reason}                             counter
//	hookgate_idle_connections_closed_total                  counter
//	hookgate_dedupe_seconds                                 histogram
//	hookgate_inbox_pending                                  gauge
//	hookgate_inbox_oldest_pending_seconds                   gauge
//	hookgate_deliveries_total{source,destination,outcome}   counter
//	hookgate_delivery_seconds{destination}                  histogram
//	hookgate_dead_events_total{source,reason}               counter
package metrics
