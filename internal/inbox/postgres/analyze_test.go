package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/postgres"
)

// TestAnalyzesOutgrownTables: a new database's tables, which grow from
// nothing to thousands of rows in their first minute, are analyzed by the
// store (last_analyze; autovacuum's own would be last_autoanalyze), so
// that the plans prepared on them while they were empty are made again.
func TestAnalyzesOutgrownTables(t *testing.T) {
	t.Parallel()
	s := open(t, postgres.Migrated.New(t), nil)
	analyzed := func() bool {
		var at *time.Time
		if err := s.Pool().QueryRow(t.Context(),
			`SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'inbox_events'`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at != nil
	}
	if analyzed() {
		t.Fatal("inbox_events analyzed before any event")
	}
	// The statistics of rows inserted reach pg_stat_user_tables within
	// a second or so of the insert: the store looks again at each
	// thousand events.
	const most = 30000
	for n := 0; n < most; n += 100 {
		items := make([]inbox.Item, 100)
		for i := range items {
			items[i] = testItem(fmt.Sprintf("evt_%d", n+i))
		}
		if _, err := s.Accept(t.Context(), items); err != nil {
			t.Fatal(err)
		}
		if (n+100)%1000 == 0 && analyzed() {
			return
		}
		if n >= 2000 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Fatalf("inbox_events never analyzed by the store after %d events", most)
}
