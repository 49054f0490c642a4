package console

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
)

// The value axis ticks at 1, 2 or 5 times a power of ten, about four
// times, up to the first tick at or above the largest value.
func TestAxisTop(t *testing.T) {
	t.Parallel()
	for largest, want := range map[int64][2]int64{0: {1, 1}, 3: {1, 3}, 4: {1, 4}, 5: {2, 6}, 137: {50, 150}, 1000: {500, 1000}, 12_345: {5000, 15_000}} {
		if every, top := axisTop(largest); every != want[0] || top != want[1] {
			t.Errorf("axisTop(%d) = %d, %d; want %d, %d", largest, every, top, want[0], want[1])
		}
	}
	if got := axisLabel(15_000); got != "15k" {
		t.Errorf("axisLabel(15000) = %s", got)
	}
}

// A day's chart has a time axis labelled every 3 hours in UTC, a value
// axis in events per hour, one line per counter through the middle of
// each hour, and a title per hour for the pointer.
func TestChartAxes(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	acts := make([]inbox.Activity, 24)
	for i := range acts {
		acts[i] = inbox.Activity{Start: start.Add(time.Duration(i) * time.Hour), Received: int64(i)}
	}
	acts[5].Dead = 2
	c := newChart("Last 24 hours", "events per hour", acts, time.Hour, 3)
	var labels []string
	for _, x := range c.XTicks {
		labels = append(labels, x.Label)
	}
	if want := []string{"00:00", "03:00", "06:00", "09:00", "12:00", "15:00", "18:00", "21:00"}; !slices.Equal(labels, want) {
		t.Errorf("time axis %v, want %v", labels, want)
	}
	labels = nil
	for _, y := range c.YTicks {
		labels = append(labels, y.Label)
	}
	if want := []string{"0", "10", "20", "30"}; !slices.Equal(labels, want) {
		t.Errorf("value axis %v, want %v", labels, want)
	}
	if len(c.Lines) != 4 || c.Lines[0].Name != "received" || c.Lines[0].Total != 276 || c.Lines[3].Total != 2 {
		t.Fatalf("lines %+v", c.Lines)
	}
	pts := strings.Fields(c.Lines[0].Points)
	if len(pts) != 24 || pts[0] != "66.5,156.0" || pts[23] != "733.5,44.1" {
		t.Errorf("received points %s … %s (%d)", pts[0], pts[len(pts)-1], len(pts))
	}
	if len(c.Cells) != 24 || c.Cells[5].Title != "05:00–06:00 UTC: 5 received, 0 duplicates, 0 processed, 2 dead" {
		t.Errorf("cell titles %q", c.Cells[5].Title)
	}
}

// sinceLog is the store's ActivityReader, noting where each read starts.
type sinceLog struct {
	inbox.ActivityReader
	since []time.Time
}

func (s *sinceLog) Activity(ctx context.Context, since time.Time, step time.Duration) ([]inbox.Activity, error) {
	s.since = append(s.since, since)
	return s.ActivityReader.Activity(ctx, since, step)
}

// The cache reads the whole period once, then only from the last closed
// interval, and the whole period again after rereadEvery; what it shows
// is what a fresh read of the store shows.
func TestActivityCache(t *testing.T) {
	t.Parallel()
	clock := dedupetest.NewClock(time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC))
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	accept := func(id string) {
		k := dedupe.Key{Provider: "stripe", EventID: id}
		if _, err := store.Accept(t.Context(), []inbox.Item{{Window: time.Hour, Event: inbox.Event{Hash: k.Hash(), Scope: k.Scope(),
			Source: "stripe", Provider: "stripe", EventID: id, Payload: []byte(`{}`)}}}); err != nil {
			t.Fatal(err)
		}
	}
	log := &sinceLog{ActivityReader: store}
	cache := newActivityCache(log, time.Minute, 60)
	read := func() []inbox.Activity {
		t.Helper()
		got, err := cache.read(t.Context(), clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := newActivityCache(store, time.Minute, 60).read(t.Context(), clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, fresh) {
			t.Errorf("the cache shows %v, a fresh read %v", got, fresh)
		}
		return got
	}
	accept("a")
	read()
	clock.Advance(5 * time.Minute)
	accept("b")
	acts := read()
	clock.Advance(time.Minute)
	accept("c")
	read()
	if acts[59].Received != 1 || acts[54].Received != 1 {
		t.Errorf("minutes %v, want one event at 12:00 and one at 12:05", acts[50:])
	}
	want := []time.Time{
		time.Date(2026, 3, 1, 11, 1, 0, 0, time.UTC),  // the hour up to 12:00
		time.Date(2026, 3, 1, 11, 59, 0, 0, time.UTC), // closed up to 11:59 at 12:00:30
		time.Date(2026, 3, 1, 12, 4, 0, 0, time.UTC),  // closed up to 12:04 at 12:05:30
	}
	if !slices.EqualFunc(log.since, want, time.Time.Equal) {
		t.Errorf("reads from %v, want %v", log.since, want)
	}
	clock.Advance(rereadEvery)
	read()
	if last := log.since[len(log.since)-1]; !last.Equal(time.Date(2026, 3, 1, 11, 17, 0, 0, time.UTC)) {
		t.Errorf("after %v the read starts at %v, want the whole hour again", rereadEvery, last)
	}
}
