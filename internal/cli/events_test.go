package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/eventview"
	"github.com/hookgate/hookgate/internal/inbox"
)

func TestEventsListAndShow(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	ids := d.accept("stripe", "acme", "evt_1", "evt_2")
	d.accept("crm", "62515", "e_3")
	d.route(ids[1], "app")
	d.attempt("stripe", "app", ids[1], inbox.DeliveryPending, 503, "503 Service Unavailable")

	type line struct {
		ID         int64     `json:"id"`
		Key        string    `json:"key"`
		Scope      string    `json:"scope"`
		Source     string    `json:"source"`
		Tenant     string    `json:"tenant"`
		EventID    string    `json:"event_id"`
		Status     string    `json:"status"`
		ReceivedAt time.Time `json:"received_at"`
		Applied    *string   `json:"applied"`
		Transition *string   `json:"transition"`
		Attempts   *int      `json:"attempts"`
		LastError  *string   `json:"last_error"`
	}
	var got []line
	sc := bufio.NewScanner(strings.NewReader(d.mustRun("events", "list", "--source", "stripe", "--json")))
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, l)
	}
	if len(got) != 2 || got[0].ID != ids[1] || got[0].EventID != "evt_2" || got[0].Tenant != "acme" ||
		got[0].Scope != "acme/stripe/charge/" || len(got[0].Key) != 32 ||
		!got[0].ReceivedAt.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("events list --json = %+v", got)
	}
	if l := got[0]; l.Status != "delivering" || l.Applied == nil || *l.Applied != "none" || l.Transition == nil || *l.Transition != "" ||
		l.Attempts == nil || *l.Attempts != 1 || l.LastError == nil || *l.LastError != "app: 503 Service Unavailable" {
		t.Errorf("delivering event = %+v", l)
	}
	if l := got[1]; l.Status != "received" || l.Applied == nil || *l.Applied != "none" || l.Attempts == nil || *l.Attempts != 0 ||
		l.LastError == nil || *l.LastError != "" {
		t.Errorf("received event = %+v", l)
	}
	table := d.mustRun("events", "list", "--tenant", "62515")
	if !strings.Contains(table, "e_3") || strings.Contains(table, "evt_1") {
		t.Fatalf("events list --tenant 62515:\n%s", table)
	}
	if out := d.mustRun("events", "list", "--status", "delivering"); strings.Count(out, "\n") != 2 || !strings.Contains(out, "evt_2") {
		t.Errorf("events list --status delivering:\n%s", out)
	}

	show := d.mustRun("events", "show", strconv.FormatInt(ids[0], 10), "--json")
	var full struct {
		EventID string          `json:"event_id"`
		Payload json.RawMessage `json:"payload"`
	}
	var payload bytes.Buffer
	if err := json.Unmarshal([]byte(show), &full); err != nil || full.EventID != "evt_1" ||
		json.Compact(&payload, full.Payload) != nil || payload.String() != `{"id":"evt_1"}` {
		t.Fatalf("events show --json: %v\n%s", err, show)
	}
	if _, _, err := d.run("events", "show", "999"); err == nil {
		t.Fatal("events show of an unknown id succeeded")
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"events", "list", "--limit", "0"}, "--limit must be positive"},
		{[]string{"events", "list", "--status", "done"}, `--status "done": want received, retry, delivering, processed or dead`},
		{[]string{"events", "show"}, "want one event: its ID, provider event id or key"},
		{[]string{"events", "list", "--apply", "done"}, `--apply "done": want applied, unchanged, stale, none, pending or tie`},
		{[]string{"events", "list", "--key", "abc"}, `--key "abc": want the 32 hex digits of a key`},
		{[]string{"events", "list", "--since", "2h", "--until", "3h"}, "--until 3h is not after --since 2h"},
	} {
		if _, _, err := d.run(c.args...); err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v: %v, want a usage error containing %q", c.args, err, c.msg)
		}
	}
}

// showDB holds charge ch_1's event 1 (state pending) and event 2 (state
// succeeded, a transition), which went to app (delivered at once) and
// ledger (refused once at 10:00:01, due again a minute later).
func showDB(t *testing.T) (*opsDB, int64) {
	t.Helper()
	d := newOpsDB(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	charge := func(id string, version int64, state string) inbox.Event {
		return inbox.Event{Source: "stripe", Provider: "stripe", Tenant: "acme", EventID: id, Type: "charge." + state,
			EntityType: "charge", EntityID: "ch_1", EntityVersion: strconv.FormatInt(version, 10), EntityState: state,
			EntityOrder: version,
			Payload:     []byte(`{"id":"` + id + `","data":{"object":{"id":"ch_1","status":"` + state + `"}}}`),
			Headers:     map[string]string{"Content-Type": "application/json", "Stripe-Signature": "t=1,v1=ab"}}
	}
	first := d.acceptEvent(charge("evt_1", 1, "pending"))
	d.route(first)
	id := d.acceptEvent(charge("evt_2", 2, "succeeded"))
	d.route(id, "app", "ledger")
	d.attempt("stripe", "app", id, inbox.DeliveryDelivered, 204, "")
	d.attempt("stripe", "ledger", id, inbox.DeliveryPending, 503, "503 Service Unavailable")
	return d, id
}

func TestEventsShow(t *testing.T) {
	t.Parallel()
	d, id := showDB(t)
	golden(t, "events-show", d.mustRun("events", "show", strconv.FormatInt(id, 10)))
}

func TestEventsShowJSON(t *testing.T) {
	t.Parallel()
	d, id := showDB(t)
	var v eventview.Detail
	if err := json.Unmarshal([]byte(d.mustRun("events", "show", "--json", strconv.FormatInt(id, 10))), &v); err != nil {
		t.Fatal(err)
	}
	if v.ID != id || v.Status != inbox.StatusDelivering || v.Applied != inbox.ApplyApplied || v.Transition != "pending->succeeded" ||
		v.Attempts != 2 || v.LastError != "ledger: 503 Service Unavailable" || v.Type != "charge.succeeded" {
		t.Errorf("event = %+v", v.Event)
	}
	if v.Entity == nil || v.Entity.State != "succeeded" || v.Entity.Version != "2" || v.Entity.WrittenBy != id {
		t.Errorf("entity = %+v", v.Entity)
	}
	if v.Headers["Stripe-Signature"] != "t=1,v1=ab" || !strings.Contains(string(v.Payload), `"succeeded"`) {
		t.Errorf("headers %v, payload %s", v.Headers, v.Payload)
	}
	if len(v.Deliveries) != 2 || v.Deliveries[0].Destination != "app" || v.Deliveries[1].Destination != "ledger" {
		t.Fatalf("deliveries = %+v", v.Deliveries)
	}
	ledger := v.Deliveries[1]
	if ledger.Status != inbox.DeliveryPending || ledger.Code != 503 || len(ledger.Log) != 1 ||
		!ledger.NextAttemptAt.Equal(time.Date(2026, 3, 1, 10, 1, 1, 2e6, time.UTC)) {
		t.Errorf("ledger = %+v", ledger)
	}
	if a := ledger.Log[0]; a.Code != 503 || a.DurationMS != 25 || a.Body != "answer: 503 Service Unavailable" ||
		!a.At.Equal(time.Date(2026, 3, 1, 10, 0, 1, 2e6, time.UTC)) {
		t.Errorf("ledger's attempt = %+v", a)
	}
}

// TestEventsShowText: a payload that is not JSON is printed as text, its
// tabs kept, its control characters and invalid bytes escaped; an event
// with no entity, headers or deliveries says so.
func TestEventsShowText(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	id := d.acceptEvent(inbox.Event{Source: "sf", Provider: "salesforce", Tenant: "00D5\x1b[31m", EventID: "n1",
		Payload: []byte("<Notification>\r\n\t<Id>n1</Id>\x1b]0;owned\x07\xff\n</Notification>")})
	golden(t, "events-show-text", d.mustRun("events", "show", strconv.FormatInt(id, 10)))
}
