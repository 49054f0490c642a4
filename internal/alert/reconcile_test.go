package alert_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
)

// reconcile.gap opens when a source's last reconciliation run recovered
// events, says how many, stays open while later runs keep failing, and
// resolves once a run completes without recovering anything.
func TestReconcileGap(t *testing.T) {
	t.Parallel()
	b := setup(t, config.Source{Name: "pay"})
	save := func(last inbox.RunState) {
		t.Helper()
		last.Started, last.Ended = b.clock.Now(), b.clock.Now()
		if err := b.store.SaveCheckpoint(t.Context(), inbox.Checkpoint{Source: "pay", Through: last.Started, Last: last}); err != nil {
			t.Fatal(err)
		}
	}
	save(inbox.RunState{Listed: 40, Had: 40})
	b.check(t)
	equal(t, b.slack.changes())
	save(inbox.RunState{Listed: 40, Had: 37, Recovered: 3})
	b.check(t)
	equal(t, b.slack.changes(), "reconcile.gap opened")
	if m := b.slack.got[0]; m.Source != "pay" || m.Counts["recovered"] != 3 || !strings.Contains(m.Summary, "recovered 3 events whose webhook never came") {
		t.Errorf("opened: %+v", m)
	}
	b.clock.Advance(time.Minute)
	save(inbox.RunState{Error: "stripe reconcile: GET /v1/events: refused by the provider's API: 401"})
	b.check(t)
	equal(t, b.slack.changes(), "reconcile.gap opened")
	save(inbox.RunState{Listed: 12, Had: 12})
	b.check(t)
	equal(t, b.slack.changes(), "reconcile.gap opened", "reconcile.gap resolved")
	if m := b.slack.got[1]; !strings.Contains(m.Summary, "found no gap") {
		t.Errorf("resolved: %q", m.Summary)
	}
}
