package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hookgate/hookgate/internal/inbox"
)

// observer is the worker pool's hook interface, which *Metrics satisfies.
type observer interface {
	Delivered(source, dest, outcome string, d time.Duration)
	Dead(source, reason string)
	Lost(what string, n int)
}

var _ observer = (*Metrics)(nil)

func TestDeliveredAndDead(t *testing.T) {
	t.Parallel()
	m := New()
	m.Delivered("stripe", "app", DeliveryDelivered, 20*time.Millisecond)
	m.Delivered("stripe", "app", DeliveryDelivered, 30*time.Millisecond)
	m.Delivered("stripe", "app", DeliveryRetry, 12*time.Second)
	m.Delivered("shop", "ledger", DeliveryDead, time.Second)
	m.Dead("stripe", DeadInvalid)
	m.Dead("stripe", DeadInvalid)
	m.Dead("shop", DeadDelivery)
	m.Lost("delivery", 3)

	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"stripe", "app", "delivered"}, 2},
		{[]string{"stripe", "app", "retry"}, 1},
		{[]string{"shop", "ledger", "dead"}, 1},
	} {
		if got := testutil.ToFloat64(m.Deliveries.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("deliveries%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := testutil.ToFloat64(m.DeadEvents.WithLabelValues("stripe", DeadInvalid)); got != 2 {
		t.Errorf("dead{stripe,invalid} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.DeadEvents.WithLabelValues("shop", DeadDelivery)); got != 1 {
		t.Errorf("dead{shop,delivery} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.LeasesLost.WithLabelValues("delivery")); got != 3 {
		t.Errorf("leases_lost{delivery} = %v, want 3", got)
	}
	// Three attempts to app (0.062 s in all), one to ledger; the 12 s retry
	// falls in no bucket below +Inf.
	err := testutil.GatherAndCompare(m.Registry, strings.NewReader(`
# HELP hookgate_delivery_seconds Time of one delivery attempt, by destination.
# TYPE hookgate_delivery_seconds histogram
hookgate_delivery_seconds_bucket{destination="app",le="0.005"} 0
hookgate_delivery_seconds_bucket{destination="app",le="0.01"} 0
hookgate_delivery_seconds_bucket{destination="app",le="0.02"} 1
hookgate_delivery_seconds_bucket{destination="app",le="0.04"} 2
hookgate_delivery_seconds_bucket{destination="app",le="0.08"} 2
hookgate_delivery_seconds_bucket{destination="app",le="0.16"} 2
hookgate_delivery_seconds_bucket{destination="app",le="0.32"} 2
hookgate_delivery_seconds_bucket{destination="app",le="0.64"} 2
hookgate_delivery_seconds_bucket{destination="app",le="1.28"} 2
hookgate_delivery_seconds_bucket{destination="app",le="2.56"} 2
hookgate_delivery_seconds_bucket{destination="app",le="5.12"} 2
hookgate_delivery_seconds_bucket{destination="app",le="10.24"} 2
hookgate_delivery_seconds_bucket{destination="app",le="20.48"} 3
hookgate_delivery_seconds_bucket{destination="app",le="+Inf"} 3
hookgate_delivery_seconds_sum{destination="app"} 12.05
hookgate_delivery_seconds_count{destination="app"} 3
hookgate_delivery_seconds_bucket{destination="ledger",le="0.005"} 0
hookgate_delivery_seconds_bucket{destination="ledger",le="0.01"} 0
hookgate_delivery_seconds_bucket{destination="ledger",le="0.02"} 0
hookgate_delivery_seconds_bucket{destination="ledger",le="0.04"} 0
hookgate_delivery_seconds_bucket{destination="ledger",le="0.08"} 0
hookgate_delivery_seconds_bucket{destination="ledger",le="0.16"} 0
hookgate_delivery_seconds_bucket{destination="ledger",le="0.32"} 0
hookgate_delivery_seconds_bucket{destination="ledger",le="0.64"} 0
hookgate_delivery_seconds_bucket{destination="ledger",le="1.28"} 1
hookgate_delivery_seconds_bucket{destination="ledger",le="2.56"} 1
hookgate_delivery_seconds_bucket{destination="ledger",le="5.12"} 1
hookgate_delivery_seconds_bucket{destination="ledger",le="10.24"} 1
hookgate_delivery_seconds_bucket{destination="ledger",le="20.48"} 1
hookgate_delivery_seconds_bucket{destination="ledger",le="+Inf"} 1
hookgate_delivery_seconds_sum{destination="ledger"} 1
hookgate_delivery_seconds_count{destination="ledger"} 1
`), "hookgate_delivery_seconds")
	if err != nil {
		t.Error(err)
	}
}

func TestReceivedAndDedupe(t *testing.T) {
	t.Parallel()
	m := New()
	m.Received.WithLabelValues("stripe", ReceivedAccepted).Add(3)
	m.Received.WithLabelValues("stripe", ReceivedDuplicate).Inc()
	m.DedupeSeconds.Observe(0.002)
	err := testutil.GatherAndCompare(m.Registry, strings.NewReader(`
# HELP hookgate_events_received_total Events received by intake, by source and outcome (accepted, duplicate, unauthenticated, invalid, store_error).
# TYPE hookgate_events_received_total counter
hookgate_events_received_total{outcome="accepted",source="stripe"} 3
hookgate_events_received_total{outcome="duplicate",source="stripe"} 1
`), "hookgate_events_received_total")
	if err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.DedupeSeconds); n != 1 {
		t.Errorf("dedupe histogram series = %d, want 1", n)
	}
}

// watched returns metrics whose inbox gauges read the given stats at the
// fixed time now.
func watched(t *testing.T, now time.Time, stats func(context.Context) (inbox.Stats, error)) *Metrics {
	t.Helper()
	m := New()
	m.inbox.now = func() time.Time { return now }
	m.WatchInbox(stats)
	return m
}

func TestWatchInbox(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	calls := 0
	m := watched(t, now, func(ctx context.Context) (inbox.Stats, error) {
		calls++
		if _, ok := ctx.Deadline(); !ok {
			t.Error("stats called without a deadline")
		}
		return inbox.Stats{Pending: 7, OldestPending: now.Add(-90 * time.Second), Lanes: []inbox.LaneState{
			{Lane: inbox.Lane{Source: "shop", Destination: "app"}, State: inbox.LanePaused, Pending: 12},
			{Lane: inbox.Lane{Source: "shop", Destination: "ledger"}, Pending: 1},
		}}, nil
	})
	const want = `
# HELP hookgate_inbox_oldest_pending_seconds Age of the oldest event waiting to be processed; 0 when none waits.
# TYPE hookgate_inbox_oldest_pending_seconds gauge
hookgate_inbox_oldest_pending_seconds 90
# HELP hookgate_inbox_pending Events waiting to be processed or delivered (received, in retry or delivering).
# TYPE hookgate_inbox_pending gauge
hookgate_inbox_pending 7
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want),
		"hookgate_inbox_pending", "hookgate_inbox_oldest_pending_seconds"); err != nil {
		t.Error(err)
	}
	const lanes = `
# HELP hookgate_destination_pending Deliveries to a source's destination not yet delivered or failed for good.
# TYPE hookgate_destination_pending gauge
hookgate_destination_pending{destination="app",source="shop"} 12
hookgate_destination_pending{destination="ledger",source="shop"} 1
# HELP hookgate_destination_state 1 for the state (healthy, failing, paused) a source's destination is in, 0 for the others.
# TYPE hookgate_destination_state gauge
hookgate_destination_state{destination="app",source="shop",state="failing"} 0
hookgate_destination_state{destination="app",source="shop",state="healthy"} 0
hookgate_destination_state{destination="app",source="shop",state="paused"} 1
hookgate_destination_state{destination="ledger",source="shop",state="failing"} 0
hookgate_destination_state{destination="ledger",source="shop",state="healthy"} 1
hookgate_destination_state{destination="ledger",source="shop",state="paused"} 0
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(lanes),
		"hookgate_destination_state", "hookgate_destination_pending"); err != nil {
		t.Error(err)
	}
	if calls != 2 {
		t.Errorf("stats called %d times for two scrapes, want 2", calls)
	}

	// A later WatchInbox replaces the function; nothing pending reads 0.
	m.WatchInbox(func(context.Context) (inbox.Stats, error) { return inbox.Stats{}, nil })
	const empty = `
# HELP hookgate_inbox_oldest_pending_seconds Age of the oldest event waiting to be processed; 0 when none waits.
# TYPE hookgate_inbox_oldest_pending_seconds gauge
hookgate_inbox_oldest_pending_seconds 0
# HELP hookgate_inbox_pending Events waiting to be processed or delivered (received, in retry or delivering).
# TYPE hookgate_inbox_pending gauge
hookgate_inbox_pending 0
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(empty),
		"hookgate_inbox_pending", "hookgate_inbox_oldest_pending_seconds"); err != nil {
		t.Error(err)
	}
	if calls != 2 {
		t.Errorf("replaced stats function still called (%d calls)", calls)
	}
}

func TestInboxGaugesAbsentWithoutWatch(t *testing.T) {
	t.Parallel()
	m := New()
	n, err := testutil.GatherAndCount(m.Registry, "hookgate_inbox_pending", "hookgate_inbox_oldest_pending_seconds")
	if err != nil || n != 0 {
		t.Errorf("inbox gauges without WatchInbox: %d series, %v; want none", n, err)
	}
}

func scrape(t *testing.T, m *Metrics) (int, string) {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestHandler(t *testing.T) {
	t.Parallel()
	m := watched(t, time.Now(), func(context.Context) (inbox.Stats, error) {
		return inbox.Stats{Pending: 2}, nil
	})
	m.Received.WithLabelValues("gh", ReceivedUnauthenticated).Inc()
	m.Busy.WithLabelValues(BusyConnections).Add(2)
	code, body := scrape(t, m)
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	for _, w := range []string{
		`hookgate_events_received_total{outcome="unauthenticated",source="gh"} 1`,
		// Every reason is there before its first 503, so a rate over it
		// starts at 0 rather than at its first increase.
		`hookgate_busy_total{reason="connections"} 2`,
		`hookgate_busy_total{reason="not_ready"} 0`,
		`hookgate_busy_total{reason="pending_body"} 0`,
		"hookgate_inbox_pending 2",
		"go_goroutines ",
		"process_start_time_seconds ",
	} {
		if !strings.Contains(body, w) {
			t.Errorf("scrape does not contain %q", w)
		}
	}
}

func TestHandlerStatsError(t *testing.T) {
	t.Parallel()
	m := watched(t, time.Now(), func(context.Context) (inbox.Stats, error) {
		return inbox.Stats{}, errors.New("database is locked")
	})
	m.Dead("gh", DeadPanic)
	code, body := scrape(t, m)
	if code != http.StatusOK {
		t.Fatalf("status %d, want 200 with the other metrics", code)
	}
	if !strings.Contains(body, `hookgate_dead_events_total{reason="panic",source="gh"} 1`) {
		t.Errorf("scrape lost the other metrics:\n%s", body)
	}
	if strings.Contains(body, "hookgate_inbox_pending ") {
		t.Errorf("scrape reports an inbox depth although stats failed")
	}
	if _, err := m.Registry.Gather(); err == nil || !strings.Contains(err.Error(), "database is locked") {
		t.Errorf("Gather() = %v, want the stats error", err)
	}
}
