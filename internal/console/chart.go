package console

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// chartMinutes is how far back the charts go: a day, minute by minute.
const chartMinutes = 24 * 60

// totals are the counters a chart follows, summed over the sources.
type totals struct {
	accepted, duplicates, processed int64
}

// minute is what happened in one minute.
type minute struct {
	// at is the minute, as Unix minutes.
	at int64
	totals
}

// sampler reads the inbox's counters every minute and keeps, per minute of
// the last day, how much each grew. The counters are the store's (shared
// by every node on PostgreSQL), so the charts count the whole gateway; they
// start when the console does.
type sampler struct {
	store inbox.Store
	now   func() time.Time

	mu   sync.Mutex
	last *totals
	// ring holds the minutes, indexed by Unix minute modulo its length.
	ring [chartMinutes]minute
}

func newSampler(store inbox.Store, now func() time.Time) *sampler {
	return &sampler{store: store, now: now}
}

// run samples every period until ctx ends.
func (s *sampler) run(ctx context.Context, every time.Duration, log *slog.Logger) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := s.sample(ctx); err != nil && ctx.Err() == nil {
			log.Warn("console: reading counters for the charts", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sample reads the counters and adds their growth since the last sample
// to the current minute. Processed counts events that became processed;
// the sweep removing old ones makes it shrink, which counts as no growth.
func (s *sampler) sample(ctx context.Context) error {
	st, err := s.store.Stats(ctx)
	if err != nil {
		return err
	}
	var cur totals
	for _, src := range st.Sources {
		cur.accepted += src.Accepted
		cur.duplicates += src.Duplicates
		cur.processed += int64(src.ByStatus[inbox.StatusProcessed])
	}
	at := s.now().Unix() / 60
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil {
		m := &s.ring[at%chartMinutes]
		if m.at != at {
			*m = minute{at: at}
		}
		m.accepted += max(cur.accepted-s.last.accepted, 0)
		m.duplicates += max(cur.duplicates-s.last.duplicates, 0)
		m.processed += max(cur.processed-s.last.processed, 0)
	}
	s.last = &cur
	return nil
}

// series returns the last n minutes up to now, oldest first; minutes with
// no sample are zero.
func (s *sampler) series(n int) []minute {
	end := s.now().Unix() / 60
	out := make([]minute, n)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range out {
		at := end - int64(n-1-i)
		if m := s.ring[at%chartMinutes]; m.at == at {
			out[i] = m
		} else {
			out[i] = minute{at: at}
		}
	}
	return out
}

// chart is a server-drawn SVG line chart of the three counters.
type chart struct {
	Title  string
	Width  int
	Height int
	// Max is the value of the top of the chart.
	Max    int64
	Lines  []chartLine
	Start  time.Time
	Totals totals
}

// chartLine is one counter's polyline.
type chartLine struct {
	Name  string
	Class string
	// Points are the polyline's "x,y x,y ..." coordinates.
	Points string
	Total  int64
}

// Sizes of the drawn chart, in SVG units.
const (
	chartWidth  = 720
	chartHeight = 120
)

// newChart draws the minutes as one line per counter, scaled to the
// largest value.
func newChart(title string, minutes []minute) chart {
	c := chart{Title: title, Width: chartWidth, Height: chartHeight, Max: 1}
	if len(minutes) > 0 {
		c.Start = time.Unix(minutes[0].at*60, 0)
	}
	for _, m := range minutes {
		c.Max = max(c.Max, m.accepted, m.duplicates, m.processed)
		c.Totals.accepted += m.accepted
		c.Totals.duplicates += m.duplicates
		c.Totals.processed += m.processed
	}
	for _, l := range []struct {
		name, class string
		value       func(minute) int64
		total       int64
	}{
		{"accepted", "accepted", func(m minute) int64 { return m.accepted }, c.Totals.accepted},
		{"duplicates", "duplicates", func(m minute) int64 { return m.duplicates }, c.Totals.duplicates},
		{"processed", "processed", func(m minute) int64 { return m.processed }, c.Totals.processed},
	} {
		var pts strings.Builder
		for i, m := range minutes {
			x := 0.0
			if len(minutes) > 1 {
				x = float64(i) * chartWidth / float64(len(minutes)-1)
			}
			y := chartHeight - float64(l.value(m))*chartHeight/float64(c.Max)
			if i > 0 {
				pts.WriteByte(' ')
			}
			fmt.Fprintf(&pts, "%.1f,%.1f", x, y)
		}
		c.Lines = append(c.Lines, chartLine{Name: l.name, Class: l.class, Points: pts.String(), Total: l.total})
	}
	return c
}
