package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// TestListPlans: with listIndexes in place, every filter of List reads an
// index, never the whole events table. Only two sort: a time range sorts
// the events it holds (a scan in id order would read the whole table when
// the range holds few of the newest events), and a page after a cursor
// sorts its own rows back to newest first.
func TestListPlans(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "inbox.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	if _, err := db.Exec(listIndexes); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name   string
		filter inbox.Filter
		sorts  bool
	}{
		{"source", inbox.Filter{Source: "shop"}, false},
		{"tenant", inbox.Filter{Tenant: "acme"}, false},
		{"status", inbox.Filter{Status: inbox.StatusDead}, false},
		{"provider event id", inbox.Filter{EventID: "evt_1"}, false},
		{"key", inbox.Filter{Hash: dedupe.Key{EventID: "evt_1"}.Hash()}, false},
		{"since", inbox.Filter{Since: at}, true},
		{"until", inbox.Filter{Until: at}, true},
		{"outcome", inbox.Filter{Outcome: inbox.ApplyStale}, false},
		{"not applied", inbox.Filter{Outcome: inbox.ApplyPending}, false},
		{"before", inbox.Filter{BeforeID: 10}, false},
		{"after", inbox.Filter{AfterID: 10}, true},
		{"after, by source", inbox.Filter{AfterID: 10, Source: "shop"}, true},
	}
	for _, c := range cases {
		q, args := listQuery(c.filter)
		rows, err := db.Query("EXPLAIN QUERY PLAN "+q, args...)
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
		if strings.Contains(text, "SCAN events") || !strings.Contains(text, "SEARCH events USING") {
			t.Errorf("%s reads the whole events table:\n%s", c.name, text)
		}
		if !c.sorts && strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("%s sorts:\n%s", c.name, text)
		}
	}
}
