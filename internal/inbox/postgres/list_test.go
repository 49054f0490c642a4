package postgres

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// testListPlans: on a database of some size (planFill; schemas v2 and v3
// have the indexes), every filter of List that few events match reads the
// index made for it, never the whole of inbox_events. (When most events
// match, a walk of the primary key newest first finds a page soonest, and
// the planner rightly takes it.) TestPlans runs it.
func testListPlans(t *testing.T, url string) {
	ctx := t.Context()
	s, err := Open(ctx, url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cases := []struct {
		name   string
		filter inbox.Filter
		index  string
	}{
		{"source", inbox.Filter{Source: "other"}, "inbox_events_source"},
		{"tenant", inbox.Filter{Tenant: "globex"}, "inbox_events_tenant"},
		{"status", inbox.Filter{Status: inbox.StatusDead}, "inbox_events_status"},
		{"provider event id", inbox.Filter{EventID: "5"}, "inbox_events_event_id"},
		{"key", inbox.Filter{Hash: dedupe.Key{EventID: "5"}.Hash()}, "inbox_events_hash"},
		{"since", inbox.Filter{Since: time.Now().Add(time.Hour)}, "inbox_events_received"},
		{"until", inbox.Filter{Until: time.Now().Add(-time.Hour)}, "inbox_events_received"},
		{"outcome", inbox.Filter{Outcome: inbox.ApplyStale}, "inbox_events_outcome"},
		{"not applied", inbox.Filter{Outcome: inbox.ApplyPending}, "inbox_events_outcome"},
		{"tie", inbox.Filter{Outcome: inbox.ApplyTie}, "inbox_events_tie"},
		{"before", inbox.Filter{BeforeID: 10}, "inbox_events_pkey"},
		{"after", inbox.Filter{AfterID: 10}, "inbox_events_pkey"},
		{"after, by source", inbox.Filter{AfterID: 10, Source: "other"}, "inbox_events_source"},
	}
	for _, tc := range cases {
		q, args := listQuery(tc.filter)
		rows, err := s.pool.Query(ctx, "EXPLAIN "+q, args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		text := strings.Join(plan, "\n")
		if strings.Contains(text, "Seq Scan on inbox_events") || !strings.Contains(text, " using "+tc.index) {
			t.Errorf("%s does not read %s:\n%s", tc.name, tc.index, text)
		}
	}
}

// TestListNotPrepared: List leaves no prepared statement behind in its
// session, so each call is planned for its values; a cached statement
// would be planned once for all of them (see List).
func TestListNotPrepared(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	u, err := url.Parse(Migrated.New(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", "1")
	u.RawQuery = q.Encode()
	s, err := Open(ctx, u.String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for range 10 {
		if _, err := s.List(ctx, inbox.Filter{Source: "shop", Status: inbox.StatusDead}); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%FROM inbox_events WHERE%'
		AND statement NOT LIKE '%pg_prepared_statements%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		t.Errorf("%d List statements prepared in the session", n)
	}
}
