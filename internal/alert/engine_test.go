package alert_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/alert"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/inboxfill"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/notify"
)

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// recorder is a channel that keeps what it is sent, and fails while
// failing is set.
type recorder struct {
	mu      sync.Mutex
	got     []notify.Message
	failing bool
}

func (r *recorder) Send(_ context.Context, m notify.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failing {
		return context.DeadlineExceeded
	}
	r.got = append(r.got, m)
	return nil
}

func (r *recorder) changes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.got {
		out = append(out, m.Type+" "+string(m.Change))
	}
	return out
}

type bundle struct {
	store  *sqlite.Store
	engine *alert.Engine
	clock  *clock
	slack  *recorder
	reg    *prometheus.Registry
}

// metric returns the value of the metric name with label=value.
func (b *bundle) metric(t *testing.T, name, label, value string) float64 {
	t.Helper()
	mfs, err := b.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					if m.GetGauge() != nil {
						return m.GetGauge().GetValue()
					}
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

// setup opens a SQLite inbox and an engine on it whose one channel is a
// recorder, checking every 30 s and reminding every 4 h.
func setup(t *testing.T, sources ...config.Source) *bundle {
	t.Helper()
	c := &clock{now: time.Date(2026, 3, 14, 10, 4, 5, 0, time.UTC)}
	store, err := sqlite.Open(t.TempDir()+"/inbox.db", sqlite.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	a := slackAlerts()
	rec := &recorder{}
	reg := prometheus.NewRegistry()
	e, err := alert.New(alert.Options{Store: store, Incidents: store, Alerts: a, Sources: sources,
		Senders: map[string]alert.Sender{"ops-slack": rec}, Now: c.Now, Owner: "test", Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{store: store, engine: e, clock: c, slack: rec, reg: reg}
}

// slackAlerts are the default alerts with one channel, ops-slack.
func slackAlerts() config.Alerts {
	a := config.Default().Alerts
	a.Channels = []config.AlertChannel{{Name: "ops-slack", Type: config.ChannelSlack}}
	return a
}

// failingOpened routes evt_1 to crm, records n failed attempts of it and
// the lane paused after them, and checks: destination.failing opens. It
// returns the lane.
func (b *bundle) failingOpened(t *testing.T, n int) inbox.Lane {
	t.Helper()
	accept(t, b.store, "evt_1")
	inboxfill.Route(t, b.store, 1, "crm")
	lane := inbox.Lane{Source: "app", Destination: "crm"}
	for range n {
		b.clock.Advance(time.Second)
		inboxfill.Attempt(t, b.store, lane, inbox.Attempt{EventID: 1, At: b.clock.Now(), Code: 503, Error: "HTTP 503"},
			inbox.DeliveryPending, b.clock.Now())
	}
	b.lane(t, inbox.LanePaused, n)
	b.check(t)
	equal(t, b.slack.changes(), "destination.failing opened")
	return lane
}

// check runs one check and sends what it queued.
func (b *bundle) check(t *testing.T) {
	t.Helper()
	b.engine.Check(t.Context())
	b.engine.SendDue(t.Context())
}

func (b *bundle) lane(t *testing.T, state string, failures int) {
	t.Helper()
	st := inbox.LaneState{Lane: inbox.Lane{Source: "app", Destination: "crm"}, State: state, Failures: failures,
		LastError: "deliver to crm: HTTP 503", Changed: b.clock.Now()}
	if err := b.store.SetLaneState(t.Context(), st); err != nil {
		t.Fatal(err)
	}
}

func equal(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("sent %q, want %q", got, want)
		}
	}
}

// An incident is notified when it opens, reminded every repeat while it
// stays open (not at every check), and notified once when it ends.
func TestOpenRemindResolve(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.lane(t, inbox.LaneFailing, 4)
	b.check(t)
	equal(t, b.slack.changes())
	b.lane(t, inbox.LaneFailing, 5)
	b.check(t)
	equal(t, b.slack.changes(), "destination.failing opened")
	if open, sent := b.metric(t, "hookgate_incidents_open", "kind", "destination.failing"), b.metric(t, "hookgate_alerts_sent_total", "channel", "ops-slack"); open != 1 || sent != 1 {
		t.Errorf("hookgate_incidents_open = %v, hookgate_alerts_sent_total = %v; want 1 and 1", open, sent)
	}
	for range 3 {
		b.clock.Advance(time.Hour)
		b.check(t)
	}
	equal(t, b.slack.changes(), "destination.failing opened")
	b.clock.Advance(time.Hour + time.Second)
	b.check(t)
	b.clock.Advance(30 * time.Second)
	b.check(t)
	equal(t, b.slack.changes(), "destination.failing opened", "destination.failing reminder")
	b.lane(t, inbox.LaneHealthy, 0)
	b.check(t)
	b.check(t)
	equal(t, b.slack.changes(), "destination.failing opened", "destination.failing reminder", "destination.recovered resolved")
}

// A channel that fails is retried with backoff, and the notice is sent
// once it answers; nothing is lost and nothing is sent twice.
func TestFailingChannelIsRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.slack.failing = true
	b.lane(t, inbox.LanePaused, 5)
	b.check(t)
	b.check(t)
	equal(t, b.slack.changes())
	b.slack.mu.Lock()
	b.slack.failing = false
	b.slack.mu.Unlock()
	b.check(t)
	equal(t, b.slack.changes())
	b.clock.Advance(11 * time.Second)
	b.check(t)
	b.check(t)
	equal(t, b.slack.changes(), "destination.failing opened")
}

// processing.lag opens while the oldest pending event is older than
// alerts.lag, and ends when it is processed.
func TestProcessingLag(t *testing.T) {
	t.Parallel()
	b := setup(t, config.Source{Name: "app"})
	accept(t, b.store, "evt_1")
	b.check(t)
	b.clock.Advance(16 * time.Minute)
	b.check(t)
	equal(t, b.slack.changes(), "processing.lag opened")
	if got := b.slack.got[0].Counts; got["pending"] != 1 || got["lag_seconds"] < 16*60 {
		t.Errorf("lag counts %v, want 1 pending for 16 minutes", got)
	}
}

// accept stores one event of source app.
func accept(t *testing.T, store *sqlite.Store, id string) {
	t.Helper()
	k := dedupe.Key{Provider: "app", EventID: id}
	e := inbox.Event{Hash: k.Hash(), Scope: k.Scope(), Source: "app", Provider: "standard", EventID: id,
		Payload: []byte(`{}`), Headers: map[string]string{}}
	if _, err := store.Accept(t.Context(), []inbox.Item{{Event: e, Window: time.Hour}}); err != nil {
		t.Fatal(err)
	}
}

// kill accepts events of source app and finishes them dead.
func kill(t *testing.T, b *bundle, ids ...string) {
	t.Helper()
	for _, id := range ids {
		accept(t, b.store, id)
	}
	leased, err := b.store.Lease(t.Context(), "test", len(ids), time.Minute)
	if err != nil || len(leased) != len(ids) {
		t.Fatalf("lease: %d of %d, %v", len(leased), len(ids), err)
	}
	var results []inbox.Result
	for _, e := range leased {
		results = append(results, inbox.Result{ID: e.ID, Status: inbox.StatusDead, Error: "invalid: missing field"})
	}
	if err := b.store.Finish(t.Context(), "test", results); err != nil {
		t.Fatal(err)
	}
}

// Events going dead open one incident while they keep coming, counted,
// and it ends after a quiet spell.
func TestEventsDeadGrouped(t *testing.T) {
	t.Parallel()
	b := setup(t, config.Source{Name: "app"})
	kill(t, b, "evt_old")
	b.check(t)
	equal(t, b.slack.changes())
	kill(t, b, "evt_1", "evt_2")
	b.clock.Advance(30 * time.Second)
	b.check(t)
	equal(t, b.slack.changes(), "events.dead opened")
	kill(t, b, "evt_3")
	b.clock.Advance(30 * time.Second)
	b.check(t)
	equal(t, b.slack.changes(), "events.dead opened")
	for range 10 {
		b.clock.Advance(30 * time.Second)
		b.check(t)
	}
	equal(t, b.slack.changes(), "events.dead opened")
	b.clock.Advance(30 * time.Second)
	b.check(t)
	equal(t, b.slack.changes(), "events.dead opened", "events.dead resolved")
	if got := b.slack.got[1].Counts["dead"]; got != 3 {
		t.Errorf("resolved with %d dead, want the 3 since it opened", got)
	}
}

// The lane's stored state is the view of the node that wrote it last: a
// node's first failure can overwrite another's open circuit while the
// destination is still down. The incident stays open as long as the
// newest attempts, from whichever node, failed, and ends with the first
// success.
func TestFailingSurvivesAnotherNodesView(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lane := b.failingOpened(t, 5)
	b.lane(t, inbox.LaneFailing, 1)
	b.check(t)
	b.check(t)
	equal(t, b.slack.changes(), "destination.failing opened")
	b.clock.Advance(time.Second)
	inboxfill.Attempt(t, b.store, lane, inbox.Attempt{EventID: 1, At: b.clock.Now(), Code: 200},
		inbox.DeliveryDelivered, time.Time{})
	b.check(t)
	equal(t, b.slack.changes(), "destination.failing opened", "destination.recovered resolved")

	// Another node's attempt started after that success but reached the
	// destination while it was still down, and its circuit is still
	// open: one failure after a success is not the destination failing.
	accept(t, b.store, "evt_2")
	inboxfill.Route(t, b.store, 2, "crm")
	b.clock.Advance(time.Second)
	inboxfill.Attempt(t, b.store, lane, inbox.Attempt{EventID: 2, At: b.clock.Now(), Code: 503, Error: "HTTP 503"},
		inbox.DeliveryPending, b.clock.Now())
	b.lane(t, inbox.LanePaused, 5)
	b.check(t)
	b.check(t)
	equal(t, b.slack.changes(), "destination.failing opened", "destination.recovered resolved")
}

// otherNodeRecovers is a node's view of the store whose attempts are read
// just before another node sees the destination back and ends the
// incident: the stale view still says failing.
type otherNodeRecovers struct {
	*sqlite.Store
	recover func()
}

func (o otherNodeRecovers) RecentAttempts(ctx context.Context, destination string, limit int) ([]inbox.Attempt, error) {
	recent, err := o.Store.RecentAttempts(ctx, destination, limit)
	o.recover()
	return recent, err
}

// attemptsUnread is a node whose reads of the attempt log fail.
type attemptsUnread struct{ *sqlite.Store }

func (attemptsUnread) RecentAttempts(context.Context, string, int) ([]inbox.Attempt, error) {
	return nil, errors.New("attempt log: statement timed out")
}

// A check that cannot read the attempt log leaves the destination's
// incident as it is: the paused state a node stored while the destination
// was down does not open it again once the destination is back, nor does
// it end an open one.
func TestUnreadAttemptsChangeNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lane := b.failingOpened(t, 3)
	a := slackAlerts()
	other, err := alert.New(alert.Options{Store: attemptsUnread{b.store}, Incidents: b.store, Alerts: a,
		Senders: map[string]alert.Sender{"ops-slack": b.slack}, Now: b.clock.Now, Owner: "other",
		Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	other.Check(t.Context())
	if open, err := b.store.ListIncidents(t.Context(), false, 10); err != nil || len(open) != 1 {
		t.Errorf("open incidents %+v (%v) after a check that could not read the attempts, want the one", open, err)
	}
	b.clock.Advance(time.Second)
	inboxfill.Attempt(t, b.store, lane, inbox.Attempt{EventID: 1, At: b.clock.Now(), Code: 200},
		inbox.DeliveryDelivered, time.Time{})
	b.check(t)
	other.Check(t.Context())
	b.engine.SendDue(t.Context())
	equal(t, b.slack.changes(), "destination.failing opened", "destination.recovered resolved")
}

// A check that read the incident open and the destination failing, while
// another node saw it back and ended the incident, does not open a new
// one: the ending is newer than what the check read.
func TestStaleCheckDoesNotReopen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lane := b.failingOpened(t, 3)

	view := otherNodeRecovers{Store: b.store, recover: func() {
		b.clock.Advance(time.Second)
		inboxfill.Attempt(t, b.store, lane, inbox.Attempt{EventID: 1, At: b.clock.Now(), Code: 200},
			inbox.DeliveryDelivered, time.Time{})
		b.check(t)
	}}
	a := slackAlerts()
	other, err := alert.New(alert.Options{Store: view, Incidents: b.store, Alerts: a,
		Senders: map[string]alert.Sender{"ops-slack": b.slack}, Now: b.clock.Now, Owner: "other",
		Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	other.Check(t.Context())
	b.engine.SendDue(t.Context())
	equal(t, b.slack.changes(), "destination.failing opened", "destination.recovered resolved")
	if open, err := b.store.ListIncidents(t.Context(), false, 10); err != nil || len(open) != 0 {
		t.Errorf("open incidents %+v (%v) after the destination came back, want none", open, err)
	}
}
