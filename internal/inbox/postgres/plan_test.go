package postgres

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// TestAcceptPlan: Accept finds what made an item a duplicate by index,
// whatever the planner thinks of the tables' sizes; a join there was
// planned as a scan of the whole key table, which holds every key of the
// window.
func TestAcceptPlan(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(ctx, pgtest.New(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	items := make([]inbox.Item, 100)
	for i := range items {
		k := dedupe.Key{Tenant: "acme", Provider: "shop", EventID: fmt.Sprint(i)}
		items[i] = inbox.Item{Event: inbox.Event{Hash: k.Hash(), Scope: k.Scope(), Source: "shop", EventID: k.EventID}, Window: time.Hour}
		if i%2 == 0 {
			items[i].Digest = dedupe.Key{Provider: "digest", EventID: k.EventID}.Hash()
		}
	}
	if _, err := s.Accept(ctx, items); err != nil {
		t.Fatal(err)
	}
	args, err := acceptArgs(items)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.pool.Query(ctx, "EXPLAIN "+acceptQuery, append([]any{nil}, args...)...)
	if err != nil {
		t.Fatal(err)
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
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	for _, table := range []string{"inbox_keys", "inbox_digests"} {
		if strings.Contains(text, "Seq Scan on "+table) || !strings.Contains(text, "Index Scan using "+table+"_pkey") {
			t.Errorf("Accept reads %s without its index:\n%s", table, text)
		}
	}
}
