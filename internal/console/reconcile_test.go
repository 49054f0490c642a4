package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/console"
	"github.com/hookgate/hookgate/internal/inbox"
)

// The reconciliation page shows each reconciled source's checkpoint and
// last run, with the events it recovered linked and the webhooks' events
// left out, and an interrupted run with where it resumes.
func TestReconcilePage(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{})
	b.signIn()
	if page := b.get("/ui/reconcile"); !strings.Contains(page, "No reconciliation has run") {
		t.Fatalf("empty page: %s", page)
	}
	started := b.clock.Now()
	webhook := b.accept("pay", "", jsonID, "evt_webhook")
	item := func(id string) inbox.Item {
		k := dedupe.Key{Provider: "pay", ObjectType: "charge", Action: "updated", EventID: id}
		return inbox.Item{Window: time.Hour, Event: inbox.Event{Hash: k.Hash(), Scope: k.Scope(), Source: "pay",
			Provider: "stripe", EventID: id, Type: "charge.updated", Payload: []byte(jsonID(id))}}
	}
	out, err := b.store.AcceptRecovered(t.Context(), []inbox.Item{item("evt_recovered")})
	if err != nil || out[0].Status != dedupe.New {
		t.Fatalf("AcceptRecovered: %v %v", out, err)
	}
	b.clock.Advance(time.Second)
	for _, cp := range []inbox.Checkpoint{
		{Source: "pay", Through: started, Last: inbox.RunState{Started: started, Since: started.Add(-time.Hour),
			Ended: b.clock.Now(), Listed: 2, Had: 1, Recovered: 1}},
		{Source: "shop", Last: inbox.RunState{Started: started, Ended: b.clock.Now(), Error: "refused by the provider's API: 401"},
			Run: inbox.RunState{Started: started, After: "evt_page_end", Recovered: 3}},
	} {
		if err := b.store.SaveCheckpoint(t.Context(), cp); err != nil {
			t.Fatal(err)
		}
	}
	page := b.get("/ui/reconcile")
	for _, want := range []string{
		"<h2>pay</h2>", "<dd>2</dd>", "<dd>1 (their webhook came)</dd>", "<dd>1 (no webhook came: accepted, via reconcile)</dd>",
		`href="/ui/events/` + itoa(out[0].ID) + `"`, "evt_recovered",
		"<h2>shop</h2>", "none yet", "refused by the provider&#39;s API: 401", "resumes after <span class=\"mono\">evt_page_end</span>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, `href="/ui/events/`+itoa(webhook[0])+`"`) {
		t.Errorf("the page links the webhook's event %d as recovered", webhook[0])
	}
}
