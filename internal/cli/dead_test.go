package cli_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/inbox"
)

// deadDB holds three dead events beside a received one, received at fixed
// times: evt_1 invalid (a multi-line error, never delivered), evt_3 refused
// by app at the first attempt, shop's ord_9 refused by app at the second.
func deadDB(t *testing.T) (*opsDB, []int64) {
	t.Helper()
	d := newOpsDB(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	stripe := d.accept("stripe", "acme", "evt_1", "evt_2", "evt_3")
	d.clock.Advance(time.Minute)
	shop := d.accept("shop", "globex.myshopify.com", "ord_9")
	d.finish(inbox.StatusDead, "invalid: /amount: got string, want number\nat /data/object", stripe[0])
	d.route(stripe[2], "app")
	d.attempt("stripe", "app", stripe[2], inbox.DeliveryFailed, 410, "410 Gone")
	d.route(shop[0], "app")
	d.attempt("shop", "app", shop[0], inbox.DeliveryPending, 503, "503 Service Unavailable")
	d.clock.Advance(time.Minute)
	d.attempt("shop", "app", shop[0], inbox.DeliveryFailed, 410, "410 Gone")
	return d, []int64{stripe[0], stripe[1], stripe[2], shop[0]}
}

func TestDeadList(t *testing.T) {
	t.Parallel()
	d, _ := deadDB(t)
	golden(t, "dead-list", d.mustRun("dead", "list"))
	golden(t, "dead-list-source", d.mustRun("dead", "list", "--source", "stripe", "--limit", "1"))
}

func TestDeadListJSON(t *testing.T) {
	t.Parallel()
	d, ids := deadDB(t)
	out := d.mustRun("dead", "list", "--json")
	type line struct {
		ID         int64     `json:"id"`
		Key        string    `json:"key"`
		Source     string    `json:"source"`
		Tenant     string    `json:"tenant"`
		EventID    string    `json:"event_id"`
		Status     string    `json:"status"`
		ReceivedAt time.Time `json:"received_at"`
		Applied    string    `json:"applied"`
		Attempts   int       `json:"attempts"`
		LastError  string    `json:"last_error"`
	}
	var got []line
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, l)
	}
	if len(got) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(got), out)
	}
	if got[0].ID != ids[3] || got[0].Source != "shop" || got[0].Tenant != "globex.myshopify.com" ||
		got[0].LastError != "app: 410 Gone" || got[0].Attempts != 2 || got[0].Status != "dead" || got[0].Applied != "none" {
		t.Errorf("newest dead event = %+v", got[0])
	}
	if got[1].ID != ids[2] || got[1].LastError != "app: 410 Gone" || got[1].Attempts != 1 {
		t.Errorf("dead event of stripe = %+v", got[1])
	}
	if got[2].ID != ids[0] || got[2].LastError != "invalid: /amount: got string, want number\nat /data/object" || got[2].Attempts != 0 ||
		!got[2].ReceivedAt.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) || len(got[2].Key) != 32 {
		t.Errorf("oldest dead event = %+v", got[2])
	}
}

func TestDeadUsage(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Now())
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"dead"}, "dead: want a subcommand: list"},
		{[]string{"dead", "show"}, `unknown subcommand "show"`},
		{[]string{"dead", "list", "--limit", "0"}, "--limit must be positive"},
		{[]string{"dead", "list", "--status", "dead"}, "flag provided but not defined"},
	} {
		_, _, err := d.run(c.args...)
		if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v: %v, want a usage error containing %q", c.args, err, c.msg)
		}
	}
	if out := d.mustRun("dead", "list"); out != "ID  RECEIVED  SOURCE  TENANT  EVENT ID  ATTEMPTS  LAST ERROR\n" {
		t.Errorf("empty dead list = %q", out)
	}
}
