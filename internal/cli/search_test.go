package cli_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// searchDB holds, received an hour apart from 2026-03-01T10:00:00Z:
// stripe/acme evt_1 (charge ch_1, applied), crm/62515 evt_1 (not applied),
// stripe/acme evt_2 (charge ch_1 at an older version: stale) and
// stripe/globex 77 (no entity). It returns their ids in that order.
func searchDB(t *testing.T) (*opsDB, []int64) {
	t.Helper()
	d := newOpsDB(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	charge := func(source, tenant, id string, version int64) inbox.Event {
		e := inbox.Event{Source: source, Provider: "stripe", Tenant: tenant, EventID: id, Type: "charge.updated",
			Payload: []byte(`{"id":"` + id + `"}`)}
		if version > 0 {
			e.EntityType, e.EntityID, e.EntityOrder, e.EntityState = "charge", "ch_1", version, "paid"
			e.EntityVersion = strconv.FormatInt(version, 10)
		}
		return e
	}
	var ids []int64
	for _, e := range []inbox.Event{
		charge("stripe", "acme", "evt_1", 2), charge("crm", "62515", "evt_1", 0),
		charge("stripe", "acme", "evt_2", 1), charge("stripe", "globex", "77", 0),
	} {
		ids = append(ids, d.acceptEvent(e))
		d.clock.Advance(time.Hour)
	}
	d.route(ids[0])
	d.route(ids[2])
	d.route(ids[3])
	return d, ids
}

// listed runs events list with args and returns the ids it printed, in
// order.
func (d *opsDB) listed(args ...string) []string {
	d.t.Helper()
	var ids []string
	for i, line := range strings.Split(strings.TrimSpace(d.mustRun(append([]string{"events", "list"}, args...)...)), "\n") {
		if i > 0 {
			ids = append(ids, strings.Fields(line)[0])
		}
	}
	return ids
}

// TestEventsListSearch: events list narrows by provider event id, key,
// time received and apply outcome, and pages on with --before.
func TestEventsListSearch(t *testing.T) {
	t.Parallel()
	d, ids := searchDB(t)
	id := func(i ...int) []string {
		s := make([]string, len(i))
		for j, n := range i {
			s[j] = strconv.FormatInt(ids[n], 10)
		}
		return s
	}
	key := dedupe.Key{Tenant: "acme", Provider: "stripe", ObjectType: "charge", EventID: "evt_2"}.Hash().String()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--event-id", "evt_1"}, id(1, 0)},
		{[]string{"--event-id", "evt_1", "--source", "crm"}, id(1)},
		{[]string{"--key", key}, id(2)},
		{[]string{"--key", strings.ToUpper(key)}, id(2)},
		{[]string{"--since", "2026-03-01T11:00:00Z"}, id(3, 2, 1)},
		{[]string{"--until", "2026-03-01T11:00:00Z"}, id(0)},
		{[]string{"--since", "2026-03-01T10:30:00Z", "--until", "2026-03-01T12:00:00Z"}, id(1)},
		{[]string{"--since", "2026-03-01"}, id(3, 2, 1, 0)},
		{[]string{"--since", "2026-03-02"}, nil},
		{[]string{"--apply", "applied"}, id(0)},
		{[]string{"--apply", "stale"}, id(2)},
		{[]string{"--apply", "none"}, id(3)},
		{[]string{"--apply", "pending"}, id(1)},
		{[]string{"--tenant", "acme", "--apply", "stale"}, id(2)},
		{[]string{"--limit", "2"}, id(3, 2)},
		{[]string{"--limit", "2", "--before", id(2)[0]}, id(1, 0)},
	} {
		if got := d.listed(c.args...); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("events list %v = %v, want %v", c.args, got, c.want)
		}
	}
	golden(t, "events-list-search", d.mustRun("events", "list", "--source", "stripe", "--since", "2026-03-01T10:30:00Z"))
}

// TestEventsShowBy: events show finds an event by its id, its provider
// event id or its key; a provider event id of several events lists them.
func TestEventsShowBy(t *testing.T) {
	t.Parallel()
	d, ids := searchDB(t)
	shows := func(want int64, args ...string) {
		t.Helper()
		out := d.mustRun(append([]string{"events", "show"}, args...)...)
		if !strings.HasPrefix(out, "event       "+strconv.FormatInt(want, 10)+"\n") {
			t.Errorf("events show %v shows\n%s\nwant event %d", args, out, want)
		}
	}
	key := dedupe.Key{Tenant: "globex", Provider: "stripe", ObjectType: "charge", EventID: "77"}.Hash().String()
	shows(ids[0], strconv.FormatInt(ids[0], 10))
	shows(ids[2], "evt_2")
	shows(ids[3], key)
	shows(ids[3], "77") // no event has the id 77: the provider event id
	shows(ids[1], "evt_1", "--source", "crm")
	shows(ids[0], "evt_1", "--tenant", "acme")

	_, _, err := d.run("events", "show", "evt_1")
	want := []string{`provider event id "evt_1" names several events`,
		"\n  " + strconv.FormatInt(ids[1], 10) + "  2026-03-01T11:00:00Z  source crm  tenant 62515",
		"\n  " + strconv.FormatInt(ids[0], 10) + "  2026-03-01T10:00:00Z  source stripe  tenant acme"}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("events show evt_1: %v, want an error containing %q", err, w)
		}
	}
	for _, arg := range []string{"evt_9", "999", strings.Repeat("0", 32)} {
		if _, _, err := d.run("events", "show", arg); err == nil || !strings.Contains(err.Error(), "no event with ID, key or provider event id") {
			t.Errorf("events show %s: %v", arg, err)
		}
	}
}
