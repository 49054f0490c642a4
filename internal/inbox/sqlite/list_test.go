package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// TestListPlans: every filter of List reads an index, never the whole
// events table, but the provider event id and the key (no index on SQLite:
// see listIndexes) and ties (see recordTies), which walk the events newest
// first, without a sort; only a page after a cursor sorts (its own rows,
// back to newest first).
func TestListPlans(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "inbox.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name   string
		filter inbox.Filter
		sorts  bool
		walks  bool // reads the events newest first (no index for it)
	}{
		{"source", inbox.Filter{Source: "shop"}, false, false},
		{"tenant", inbox.Filter{Tenant: "acme"}, false, false},
		{"status", inbox.Filter{Status: inbox.StatusDead}, false, false},
		{"provider event id", inbox.Filter{EventID: "evt_1"}, false, true},
		{"key", inbox.Filter{Hash: dedupe.Key{EventID: "evt_1"}.Hash()}, false, true},
		{"since", inbox.Filter{Since: at}, false, false},
		{"until", inbox.Filter{Until: at}, false, false},
		{"outcome", inbox.Filter{Outcome: inbox.ApplyStale}, false, false},
		{"not applied", inbox.Filter{Outcome: inbox.ApplyPending}, false, false},
		{"tie", inbox.Filter{Outcome: inbox.ApplyTie}, false, true},
		{"before", inbox.Filter{BeforeID: 10}, false, false},
		{"after", inbox.Filter{AfterID: 10}, true, false},
		{"after, by source", inbox.Filter{AfterID: 10, Source: "shop"}, true, false},
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
		switch {
		case c.walks && text != "SCAN events":
			t.Errorf("%s: want a walk of the events by id:\n%s", c.name, text)
		case !c.walks && (strings.Contains(text, "SCAN events") || !strings.Contains(text, "SEARCH events USING")):
			t.Errorf("%s reads the whole events table:\n%s", c.name, text)
		}
		if !c.sorts && strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("%s sorts:\n%s", c.name, text)
		}
	}
}

// BenchmarkList reads a page of 1M events by each filter. The events are
// 1ms apart, one of 100 tenants each, 1% stale and 1% not applied yet.
func BenchmarkList(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "inbox.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	const n = 1_000_000
	if _, err := db.Exec(`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?2)
		INSERT INTO events (hash, scope, source, provider, tenant, event_id, payload, received_at, status, apply_outcome)
		SELECT randomblob(16), 's', 'shop', 'stripe', 't_' || (n % 100), 'evt_' || n, x'7b7d', ?1 + n * 1000000,
			'processed', CASE n % 100 WHEN 0 THEN 'stale' WHEN 1 THEN '' ELSE 'applied' END FROM g`,
		base.UnixNano(), n); err != nil {
		b.Fatal(err)
	}
	var hash []byte
	if err := db.QueryRow(`SELECT hash FROM events WHERE id = ?`, n/2).Scan(&hash); err != nil {
		b.Fatal(err)
	}
	var key dedupe.Hash
	copy(key[:], hash)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Millisecond) }
	cases := []struct {
		name   string
		filter inbox.Filter
	}{
		{"newest", inbox.Filter{}},
		{"tenant", inbox.Filter{Tenant: "t_7"}},
		{"event id", inbox.Filter{EventID: "evt_500000"}},
		{"key", inbox.Filter{Hash: key}},
		{"since, all", inbox.Filter{Since: at(0)}},
		{"since, none", inbox.Filter{Since: at(n + 1)}},
		{"until, the first 1000", inbox.Filter{Until: at(1000)}},
		{"10k in the middle", inbox.Filter{Since: at(n / 2), Until: at(n/2 + 10_000)}},
		{"stale", inbox.Filter{Outcome: inbox.ApplyStale}},
		{"not applied", inbox.Filter{Outcome: inbox.ApplyPending}},
		{"after", inbox.Filter{AfterID: n - 10}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.List(b.Context(), c.filter); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
