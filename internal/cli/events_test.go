package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestEventsListAndShow(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	ids := d.accept("stripe", "acme", "evt_1", "evt_2")
	d.accept("crm", "62515", "e_3")

	type line struct {
		ID         int64     `json:"id"`
		Key        string    `json:"key"`
		Scope      string    `json:"scope"`
		Source     string    `json:"source"`
		Tenant     string    `json:"tenant"`
		EventID    string    `json:"event_id"`
		Status     string    `json:"status"`
		ReceivedAt time.Time `json:"received_at"`
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
		got[0].Status != "received" || got[0].Scope != "acme/stripe/charge/" || len(got[0].Key) != 32 ||
		!got[0].ReceivedAt.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("events list --json = %+v", got)
	}
	table := d.mustRun("events", "list", "--tenant", "62515")
	if !strings.Contains(table, "e_3") || strings.Contains(table, "evt_1") {
		t.Fatalf("events list --tenant 62515:\n%s", table)
	}

	show := d.mustRun("events", "show", strconv.FormatInt(ids[0], 10))
	var full struct {
		EventID string          `json:"event_id"`
		Payload json.RawMessage `json:"payload"`
	}
	var payload bytes.Buffer
	if err := json.Unmarshal([]byte(show), &full); err != nil || full.EventID != "evt_1" ||
		json.Compact(&payload, full.Payload) != nil || payload.String() != `{"id":"evt_1"}` {
		t.Fatalf("events show: %v\n%s", err, show)
	}
	if _, _, err := d.run("events", "show", "999"); err == nil {
		t.Fatal("events show of an unknown id succeeded")
	}
	if _, _, err := d.run("events", "list", "--limit", "0"); err == nil {
		t.Fatal("events list --limit 0 succeeded")
	}
}
