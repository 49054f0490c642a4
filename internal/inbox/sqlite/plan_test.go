package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/sqlitedb"
)

// TestQueryPlans checks that the queries that run on every lease, sweep
// and metrics scrape read their index, not the events table: a
// change to either side that breaks the match would turn them into full
// scans without failing any other test. None sorts, except that the
// pending count groups the pending events (only those) by source.
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
		grouped     bool
	}{
		{"lease", leaseQuery, []any{"w", 2, 1, 1, 10}, "USING COVERING INDEX events_due", false},
		{"sweep", sweepQuery, []any{1, 10}, "USING COVERING INDEX events_processed", false},
		{"pending", pendingQuery, nil, "USING COVERING INDEX events_due", true},
		{"lane lease", laneLease, []any{"w", 2, "app", "shop", "app", 1, 1, 10}, "USING COVERING INDEX deliveries_due", false},
		{"oldest delivering", oldestDelivering, nil, "USING COVERING INDEX events_status", false},
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
		if c.grouped {
			sorts = strings.Replace(sorts, "USE TEMP B-TREE FOR GROUP BY", "", 1)
		}
		if !strings.Contains(text, c.want) || strings.Contains(sorts, "TEMP B-TREE") {
			t.Errorf("%s plan:\n%s\nwant %q and no sort", c.name, text, c.want)
		}
	}
}
