package console

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
)

// The charts count per minute how much the store's counters grew, and a
// minute a day old is not shown again when the ring comes round.
func TestSamplerMinutes(t *testing.T) {
	t.Parallel()
	clock := dedupetest.NewClock(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC))
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	accept := func(ids ...string) {
		t.Helper()
		items := make([]inbox.Item, len(ids))
		for i, id := range ids {
			k := dedupe.Key{Provider: "stripe", EventID: id}
			items[i] = inbox.Item{Window: time.Hour, Event: inbox.Event{Hash: k.Hash(), Scope: k.Scope(), Source: "stripe",
				Provider: "stripe", EventID: id, Payload: []byte(`{}`), Headers: map[string]string{}}}
		}
		if _, err := store.Accept(t.Context(), items); err != nil {
			t.Fatal(err)
		}
	}
	s := newSampler(store, clock.Now)
	sample := func() {
		t.Helper()
		if err := s.sample(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	accept("old")
	sample() // the first sample only sets where counting starts
	accept("a", "b", "c")
	accept("a")
	clock.Advance(20 * time.Second)
	sample()
	clock.Advance(time.Minute)
	accept("d", "e")
	sample()
	type row struct{ accepted, duplicates int64 }
	got := func(n int) []row {
		var out []row
		for _, m := range s.series(n) {
			out = append(out, row{m.accepted, m.duplicates})
		}
		return out
	}
	if g := got(3); g[0] != (row{}) || g[1] != (row{3, 1}) || g[2] != (row{2, 0}) {
		t.Errorf("minutes %v, want [{0 0} {3 1} {2 0}]", g)
	}
	c := newChart("last hour", s.series(60))
	if c.Max != 3 || c.Totals.accepted != 5 || c.Totals.duplicates != 1 || len(c.Lines) != 3 {
		t.Errorf("chart max %d, totals %+v, %d lines", c.Max, c.Totals, len(c.Lines))
	}
	if pts := strings.Fields(c.Lines[0].Points); len(pts) != 60 || pts[58] != "707.8,0.0" || pts[59] != "720.0,40.0" {
		t.Errorf("accepted line %v", pts[58:])
	}

	clock.Advance(24 * time.Hour)
	accept("f")
	sample()
	if g := got(chartMinutes); g[chartMinutes-1] != (row{1, 0}) || g[chartMinutes-2] != (row{}) {
		t.Errorf("a day later the last two minutes are %v, want [{0 0} {1 0}]: the minutes of a day ago are gone", g[chartMinutes-2:])
	}
}
