package cli_test

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/admin"
	"github.com/hookgate/hookgate/internal/inbox"
)

// statsDB: stripe got 4 events and 2 duplicates (1 dead, 1 processed, 1
// delivering, 1 received), shop 1 event in retry. Stripe's destination
// app is paused with the delivering event pending; its ledger is healthy.
func statsDB(t *testing.T) *opsDB {
	t.Helper()
	d := newOpsDB(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	stripe := d.accept("stripe", "acme", "1", "2", "3", "4")
	d.accept("stripe", "acme", "1", "2")
	d.clock.Advance(time.Hour)
	shop := d.accept("shop", "acme", "9")
	d.finish(inbox.StatusDead, "gone", stripe[0])
	d.finish(inbox.StatusProcessed, "", stripe[1])
	d.finish(inbox.StatusRetry, "503", shop[0])
	d.route(stripe[2], "app")
	d.attempt("stripe", "app", stripe[2], inbox.DeliveryPending, 503, "503 Service Unavailable")
	for _, st := range []inbox.LaneState{
		{Lane: inbox.Lane{Source: "stripe", Destination: "app"}, State: inbox.LanePaused, Failures: 5,
			Until: d.clock.Now().Add(5 * time.Minute), LastError: "503 Service Unavailable", Changed: d.clock.Now()},
		{Lane: inbox.Lane{Source: "stripe", Destination: "ledger"}, State: inbox.LaneHealthy, Changed: d.clock.Now()},
	} {
		if err := d.store.SetLaneState(t.Context(), st); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// age is the part of the stats output that depends on the time it runs.
var age = regexp.MustCompile(`\(\S+ ago\)`)

func TestStats(t *testing.T) {
	t.Parallel()
	d := statsDB(t)
	out := d.mustRun("stats")
	if !age.MatchString(out) {
		t.Errorf("stats output has no age of the oldest pending event:\n%s", out)
	}
	golden(t, "stats", age.ReplaceAllString(out, "(AGE ago)"))
}

func TestStatsEmpty(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Now())
	golden(t, "stats-empty", d.mustRun("stats"))
}

func TestStatsJSON(t *testing.T) {
	t.Parallel()
	d := statsDB(t)
	var st admin.Stats
	if err := json.Unmarshal([]byte(d.mustRun("stats", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	s := st.Sources["stripe"]
	if s.Accepted != 4 || s.Duplicates != 2 || s.DedupeHitRate != 2.0/6 {
		t.Errorf("stripe = %+v, want 4 accepted, 2 duplicates, hit rate 1/3", s)
	}
	want := map[inbox.Status]int{inbox.StatusReceived: 1, inbox.StatusRetry: 0, inbox.StatusDelivering: 1, inbox.StatusProcessed: 1, inbox.StatusDead: 1}
	for status, n := range want {
		if s.ByStatus[status] != n {
			t.Errorf("stripe %s = %d, want %d", status, s.ByStatus[status], n)
		}
	}
	if shop := st.Sources["shop"]; shop.ByStatus[inbox.StatusRetry] != 1 || shop.DedupeHitRate != 0 {
		t.Errorf("shop = %+v", shop)
	}
	if st.Pending != 3 || !st.OldestPending.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) || st.OldestPendingSeconds <= 0 {
		t.Errorf("pending %d, oldest %v (%v s)", st.Pending, st.OldestPending, st.OldestPendingSeconds)
	}
	if len(st.Lanes) != 2 {
		t.Fatalf("lanes = %+v, want stripe's app and ledger", st.Lanes)
	}
	app, ledger := st.Lanes[0], st.Lanes[1]
	if app.Destination != "app" || app.State != "paused" || app.Failures != 5 || app.Pending != 1 ||
		!app.Until.Equal(time.Date(2026, 3, 1, 11, 5, 1, 4e6, time.UTC)) || app.LastError != "503 Service Unavailable" {
		t.Errorf("app = %+v", app)
	}
	if ledger.Destination != "ledger" || ledger.State != "healthy" || ledger.Pending != 0 || !ledger.Until.IsZero() {
		t.Errorf("ledger = %+v", ledger)
	}
}
