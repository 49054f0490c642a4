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

// readLog is the store's ActivityReader, noting what each read asks.
type readLog struct {
	inbox.ActivityReader
	reads [][2]time.Time
}

func (l *readLog) Activity(ctx context.Context, since, until time.Time, step time.Duration) ([]inbox.Activity, error) {
	l.reads = append(l.reads, [2]time.Time{since, until})
	return l.ActivityReader.Activity(ctx, since, until, step)
}

// The minute cache reads the whole period once, then only from the last
// closed minute, and the whole period again after rereadEvery; the hour
// cache reads the store only for hours that closed, and sums the open
// hour from the minutes. What each shows is what a fresh read of the
// store shows.
func TestActivityCache(t *testing.T) {
	t.Parallel()
	at := func(h, m int) time.Time { return time.Date(2026, 3, 1, h, m, 0, 0, time.UTC) }
	clock := dedupetest.NewClock(at(12, 0).Add(30 * time.Second))
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
	minuteLog, hourLog := &readLog{ActivityReader: store}, &readLog{ActivityReader: store}
	minutes, hours := newActivityCache(minuteLog, time.Minute, 62), newActivityCache(hourLog, time.Hour, 24)
	read := func() ([]inbox.Activity, []inbox.Activity) {
		t.Helper()
		m, err := minutes.read(t.Context(), clock.Now(), nil)
		if err != nil {
			t.Fatal(err)
		}
		h, err := hours.read(t.Context(), clock.Now(), m)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			got       []inbox.Activity
			step      time.Duration
			n         int
			cacheName string
		}{{m, time.Minute, 62, "minutes"}, {h, time.Hour, 24, "hours"}} {
			fresh, err := newActivityCache(store, c.step, c.n).read(t.Context(), clock.Now(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.got, fresh) {
				t.Errorf("at %v the %s cache shows %v, a fresh read %v", clock.Now(), c.cacheName, c.got, fresh)
			}
		}
		return m, h
	}
	accept("a")
	read()
	clock.Advance(5 * time.Minute)
	accept("b")
	read()
	clock.Advance(time.Minute)
	accept("c")
	m, h := read()
	if m[55].Received != 1 || m[60].Received != 1 || m[61].Received != 1 || h[23].Received != 3 {
		t.Errorf("minutes %v, hours %v: want an event at 12:00, 12:05 and 12:06", m[55:], h[22:])
	}
	want := [][2]time.Time{{at(10, 59), {}}, {at(11, 59), {}}, {at(12, 4), {}}}
	if !slices.Equal(minuteLog.reads, want) {
		t.Errorf("minute reads %v, want %v", minuteLog.reads, want)
	}
	want = [][2]time.Time{{at(13, 0).Add(-24 * time.Hour), at(11, 0)}, {at(11, 0), at(12, 0)}}
	if !slices.Equal(hourLog.reads, want) {
		t.Errorf("hour reads %v, want %v: each closed hour once", hourLog.reads, want)
	}

	clock.Advance(54 * time.Minute)
	accept("d")
	read()
	clock.Advance(time.Minute)
	_, h = read()
	if h[22].Received != 3 || h[23].Received != 1 {
		t.Errorf("hours %v, want 3 events at 12:00 and 1 at 13:00", h[22:])
	}
	if last := hourLog.reads[len(hourLog.reads)-1]; !last[0].Equal(at(12, 0)) || !last[1].Equal(at(13, 0)) {
		t.Errorf("once 12:00 closed the hour cache read %v, want 12:00 to 13:00", last)
	}
	clock.Advance(rereadEvery)
	read()
	if last := minuteLog.reads[len(minuteLog.reads)-1]; !last[0].Equal(at(12, 10)) {
		t.Errorf("after %v the minute read starts at %v, want the whole period again", rereadEvery, last[0])
	}
}
