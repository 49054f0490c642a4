package cli_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// TestTablesEscape: a tenant, event id or error with line breaks, tabs or
// terminal escape sequences neither adds rows to a table nor reaches the
// terminal; the escaped text is still there to read.
func TestTablesEscape(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	tenant := "evil\r\n9   2026-03-01T10:00:00Z  stripe  acme  forged\x1b[31m"
	id := d.acceptEvent(inbox.Event{Source: "stripe", Provider: "stripe", Tenant: tenant, EventID: "evt\t\u202e1", Type: "charge\x1b[8m",
		Payload: []byte(`{}`)})
	d.route(id, "app")
	d.attempt("stripe", "app", id, inbox.DeliveryFailed, 400, "refused\n\x1b[2J5  fake row")
	err := d.store.SetLaneState(t.Context(), inbox.LaneState{Lane: inbox.Lane{Source: "stripe", Destination: "app"},
		State: inbox.LaneFailing, Failures: 1, LastError: "\x1b]0;owned\x07\r\nstripe  ledger  healthy", Changed: d.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args  []string
		lines int
		want  []string
	}{
		{[]string{"events", "list"}, 2, []string{`evil\r\n9   2026-03-01T10:00:00Z  stripe  acme  forged\x1b[31m`, `evt\t\u202e1`}},
		{[]string{"dead", "list"}, 2, []string{`forged\x1b[31m`, `app: refused\n\x1b[2J5  fake row`}},
		{[]string{"stats"}, 7, []string{`\x1b]0;owned\a\r\nstripe  ledger  healthy`}},
		{[]string{"events", "show", strconv.FormatInt(id, 10)}, 28, []string{`tenant      evil\r\n9`, `type        charge\x1b[8m`, `refused\n\x1b[2J5  fake row`}},
	} {
		out := d.mustRun(c.args...)
		if strings.ContainsFunc(out, func(r rune) bool { return r < ' ' && r != '\n' || r == 0x7f || r == '\u202e' }) {
			t.Errorf("%v prints control characters:\n%q", c.args, out)
		}
		if n := strings.Count(out, "\n"); n != c.lines {
			t.Errorf("%v prints %d lines, want %d:\n%s", c.args, n, c.lines, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v lacks %q:\n%s", c.args, w, out)
			}
		}
	}
}
