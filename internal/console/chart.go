package console

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// How the charts read the store's activity. An interval is closed once it
// ended settleFor ago (an accept that began before its end has committed
// by then); a closed interval's counts are kept and not read again until
// the cache is rereadEvery old, when a sweep or a replay may have changed
// them. Each render reads only the intervals since the last closed one.
const (
	settleFor   = time.Minute
	rereadEvery = 10 * time.Minute
)

// activityCache is one chart's intervals, read from the store.
type activityCache struct {
	reader inbox.ActivityReader
	step   time.Duration
	n      int

	mu sync.Mutex
	// closed holds the closed intervals read, by start (Unix seconds);
	// through is where the closed intervals end, fullAt when they were
	// last all read.
	closed  map[int64]inbox.Activity
	through time.Time
	fullAt  time.Time
}

func newActivityCache(r inbox.ActivityReader, step time.Duration, n int) *activityCache {
	return &activityCache{reader: r, step: step, n: n, closed: map[int64]inbox.Activity{}}
}

// floorTo is t rounded down to a multiple of step since the Unix epoch.
func floorTo(t time.Time, step time.Duration) time.Time {
	s := int64(step / time.Second)
	u := t.Unix()
	return time.Unix(u-((u%s)+s)%s, 0).UTC()
}

// read returns the n intervals up to the one holding now, oldest first,
// with zero counts where nothing happened. finer, when it holds shorter
// intervals reaching back to the oldest interval not closed yet, gives
// the counts of those (summed), so the store is read for closed
// intervals only, and only when one closed since the last read; nil, the
// store is read for them too.
func (a *activityCache) read(ctx context.Context, now time.Time, finer []inbox.Activity) ([]inbox.Activity, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	first := floorTo(now, a.step).Add(-time.Duration(a.n-1) * a.step)
	from := first
	if now.Sub(a.fullAt) < rereadEvery && a.through.After(first) {
		from = a.through
	} else {
		clear(a.closed)
		a.fullAt = now
	}
	closedBefore := floorTo(now.Add(-settleFor), a.step)
	covered := len(finer) > 0 && !finer[0].Start.After(closedBefore)
	open := map[int64]inbox.Activity{}
	if !covered || closedBefore.After(from) {
		var until time.Time
		if covered {
			until = closedBefore
		}
		got, err := a.reader.Activity(ctx, from, until, a.step)
		if err != nil {
			a.fullAt = time.Time{}
			return nil, err
		}
		for _, act := range got {
			if act.Start.Before(closedBefore) {
				a.closed[act.Start.Unix()] = act
			} else {
				open[act.Start.Unix()] = act
			}
		}
	}
	if covered {
		for _, f := range finer {
			at := floorTo(f.Start, a.step)
			if at.Before(closedBefore) {
				continue
			}
			sum := open[at.Unix()]
			sum.Received += f.Received
			sum.Duplicates += f.Duplicates
			sum.Processed += f.Processed
			sum.Dead += f.Dead
			open[at.Unix()] = sum
		}
	}
	if closedBefore.After(from) {
		a.through = closedBefore
	}
	out := make([]inbox.Activity, a.n)
	for i := range out {
		at := first.Add(time.Duration(i) * a.step)
		act, ok := a.closed[at.Unix()]
		if !ok {
			act = open[at.Unix()]
		}
		act.Start = at
		out[i] = act
	}
	for start := range a.closed {
		if start < first.Unix() {
			delete(a.closed, start)
		}
	}
	return out, nil
}

// chart is a server-drawn SVG line chart of the activity, with a value
// axis in events per interval and a time axis in UTC.
type chart struct {
	Title string
	// Unit names what the value axis counts ("events per hour").
	Unit          string
	Width, Height int
	// The plot's edges and height, in SVG units.
	Left, Right, Top, Bottom, PlotHeight int
	YTicks, XTicks                       []tick
	Lines                                []chartLine
	// Cells are the intervals, for their hover titles.
	Cells []cell
}

// tick is one labelled mark of an axis, At its coordinate.
type tick struct {
	At    string
	Label string
}

// chartLine is one counter's polyline.
type chartLine struct {
	Name  string
	Class string
	// Points are the polyline's "x,y x,y ..." coordinates.
	Points string
	Total  int64
}

// cell is one interval's column of the plot.
type cell struct {
	X, Width string
	Title    string
}

// Sizes of the drawn chart, in SVG units.
const (
	chartWidth  = 760
	chartHeight = 180
	marginLeft  = 52
	marginRight = 12
	marginTop   = 10
	marginBot   = 24
)

// counters are the lines of a chart, in the order of its legend.
var counters = []struct {
	name  string
	value func(inbox.Activity) int64
}{
	{"received", func(a inbox.Activity) int64 { return a.Received }},
	{"duplicates", func(a inbox.Activity) int64 { return a.Duplicates }},
	{"processed", func(a inbox.Activity) int64 { return a.Processed }},
	{"dead", func(a inbox.Activity) int64 { return a.Dead }},
}

// newChart draws acts, intervals of step, one line per counter. The time
// axis labels every labelEvery-th interval boundary (in UTC, as the
// pages' times are), as hh:mm.
func newChart(title, unit string, acts []inbox.Activity, step time.Duration, labelEvery int) chart {
	c := chart{Title: title, Unit: unit, Width: chartWidth, Height: chartHeight,
		Left: marginLeft, Right: chartWidth - marginRight, Top: marginTop, Bottom: chartHeight - marginBot,
		PlotHeight: chartHeight - marginBot - marginTop}
	var top int64
	for _, a := range acts {
		for _, k := range counters {
			top = max(top, k.value(a))
		}
	}
	every, top := axisTop(top)
	plotW, plotH := float64(c.Right-c.Left), float64(c.Bottom-c.Top)
	y := func(v int64) float64 { return float64(c.Bottom) - float64(v)*plotH/float64(top) }
	for v := int64(0); v <= top; v += every {
		c.YTicks = append(c.YTicks, tick{At: coord(y(v)), Label: axisLabel(v)})
	}
	n := len(acts)
	if n == 0 {
		return c
	}
	width := plotW / float64(n)
	x := func(i int) float64 { return float64(c.Left) + (float64(i)+0.5)*width }
	label := time.Duration(labelEvery) * step
	for i, a := range acts {
		if floorTo(a.Start, label).Equal(a.Start) {
			c.XTicks = append(c.XTicks, tick{At: coord(float64(c.Left) + float64(i)*width), Label: a.Start.UTC().Format("15:04")})
		}
		c.Cells = append(c.Cells, cell{X: coord(float64(c.Left) + float64(i)*width), Width: coord(width),
			Title: fmt.Sprintf("%s–%s UTC: %d received, %d duplicates, %d processed, %d dead",
				a.Start.UTC().Format("15:04"), a.Start.Add(step).UTC().Format("15:04"), a.Received, a.Duplicates, a.Processed, a.Dead)})
	}
	for _, k := range counters {
		var pts strings.Builder
		var total int64
		for i, a := range acts {
			if i > 0 {
				pts.WriteByte(' ')
			}
			v := k.value(a)
			total += v
			pts.WriteString(coord(x(i)) + "," + coord(y(v)))
		}
		c.Lines = append(c.Lines, chartLine{Name: k.name, Class: k.name, Points: pts.String(), Total: total})
	}
	return c
}

// axisTop picks the value axis: a tick every 1, 2 or 5 times a power of
// ten, about four of them, and the top the first tick at or above the
// largest value.
func axisTop(largest int64) (every, top int64) {
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if every = m * p; every*4 >= largest {
				top = max((largest+every-1)/every*every, every)
				return every, top
			}
		}
	}
}

// coord formats an SVG coordinate.
func coord(f float64) string { return fmt.Sprintf("%.1f", f) }

// axisLabel formats an axis value: 12000 as 12k, 3500000 as 3.5M.
func axisLabel(v int64) string {
	switch {
	case v >= 1_000_000:
		return trimFloat(float64(v)/1e6) + "M"
	case v >= 10_000:
		return trimFloat(float64(v)/1e3) + "k"
	}
	return fmt.Sprint(v)
}

func trimFloat(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.1f", f)
}
