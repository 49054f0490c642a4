package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/sqlitedb"
)

// TestQueryPlans checks that the queries that run on every lease, sweep,
// recorded attempt and metrics scrape read their index, not the whole
// table: a change to either side that breaks the match would turn them
// into full scans without failing any other test. None sorts, except that
// the pending count groups the pending events (only those) by source and
// settle orders each event's failed destinations.
func TestQueryPlans(t *testing.T) {
	t.Parallel()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "inbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := New(db, Options{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, query string
		args        []any
		want        string
		// sorts is the one sort the plan may have.
		sorts string
	}{
		{"lease", leaseQuery, []any{"w", 2, 1, 1, 10}, "USING COVERING INDEX events_due", ""},
		{"sweep", sweepQuery, []any{1, 10}, "USING COVERING INDEX events_processed", ""},
		{"pending", pendingQuery, nil, "USING COVERING INDEX events_due", "USE TEMP B-TREE FOR GROUP BY"},
		{"lane lease", laneLease, []any{"w", 2, "app", "shop", "app", 1, 1, 10}, "USING COVERING INDEX deliveries_due", ""},
		{"oldest delivering", oldestDelivering, nil, "USING COVERING INDEX events_status", ""},
		{"record", recordDeliveries(2), []any{1, "a", "failed", 0, 0, "", 0, 2, "a", "delivered", 0, 0, "", 0, "w"},
			"SCAN 2-ROW VALUES CLAUSE\nSEARCH deliveries USING PRIMARY KEY (event_id=? AND destination=?)", ""},
		{"finish", finishEvents(2), []any{1, "processed", 0, "", 1, 0, 2, "dead", 0, "bad", 0, 1, "w"},
			"SCAN 2-ROW VALUES CLAUSE\nSEARCH events USING INTEGER PRIMARY KEY", ""},
		{"open", openQuery(2), []any{1, "a", "", 2, "a", "k"},
			"SCAN 2-ROW VALUES CLAUSE\nSEARCH e USING INTEGER PRIMARY KEY", ""},
		{"settle", settleQuery, []any{1, 1, "[1,2]"},
			"SCAN f\nSEARCH events USING INTEGER PRIMARY KEY", "USE TEMP B-TREE FOR group_concat(ORDER BY)"},
	}
	for _, c := range cases {
		rows, err := db.Query("EXPLAIN QUERY PLAN "+c.query, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var plan []string
		for rows.Next() {
			var (
				id, parent, unused int
				detail             string
			)
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "\n")
		sorts := text
		if c.sorts != "" {
			sorts = strings.Replace(sorts, c.sorts, "", 1)
		}
		if !strings.Contains(text, c.want) || strings.Contains(sorts, "TEMP B-TREE") {
			t.Errorf("%s plan:\n%s\nwant %q and no sort", c.name, text, c.want)
		}
	}
}
