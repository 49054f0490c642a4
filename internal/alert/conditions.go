package alert

import (
	"context"
	"net/url"
	"regexp"
	"slices"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/notify"
)

// Counts kept for the engine's own arithmetic, not shown in messages.
const (
	// countDeadBefore is the source's dead count when the incident opened.
	countDeadBefore = "dead_before"
	// countPendingPeak is the most deliveries a failing lane had waiting.
	countPendingPeak = "pending_peak"
)

// internalCounts are the counts messages leave out.
var internalCounts = []string{countDeadBefore, countPendingPeak}

// conditions returns the conditions that hold now. It updates what the
// node has seen (accepted and dead counters, refused requests, the
// spool); open holds the open incidents by key, for the counts kept
// since they opened.
func (e *Engine) conditions(ctx context.Context, stats inbox.Stats, now time.Time, open map[key]inbox.Incident) []condition {
	var out []condition
	a := e.opts.Alerts
	for _, l := range stats.Lanes {
		k := key{config.KindDestinationFailing, l.Source, l.Destination}
		if _, isOpen := open[k]; l.Source == Source || !e.failing(ctx, l, isOpen) {
			continue
		}
		stored := open[k].Counts
		c := map[string]int64{"failed_attempts": max(int64(l.Failures), stored["failed_attempts"]), "pending": int64(l.Pending),
			countPendingPeak: max(int64(l.Pending), stored[countPendingPeak])}
		if _, ok := stored[countDeadBefore]; !ok {
			c[countDeadBefore] = deadOf(stats, l.Source)
		}
		out = append(out, condition{kind: k.kind, source: l.Source, destination: l.Destination,
			counts: merge(stored, c), lastError: l.LastError})
	}
	for _, s := range e.opts.Sources {
		out = append(out, e.sourceConditions(s, stats, now, open)...)
	}
	if !stats.OldestPending.IsZero() && now.Sub(stats.OldestPending) > time.Duration(a.Lag) {
		out = append(out, condition{kind: config.KindProcessingLag, counts: map[string]int64{
			"pending": int64(stats.Pending), "lag_seconds": int64(now.Sub(stats.OldestPending) / time.Second)}})
	}
	out = append(out, e.reconcileConditions(ctx, open)...)
	if e.opts.Local.Spool != nil {
		waiting, quarantined := e.opts.Local.Spool()
		switch {
		case waiting == 0:
			e.spoolSince = time.Time{}
		case e.spoolSince.IsZero():
			e.spoolSince = now
		}
		// Events wait in the spool for a moment whenever the store
		// hiccups; they are an incident once a whole check has not
		// drained them.
		if waiting > 0 && now.Sub(e.spoolSince) >= time.Duration(a.CheckEvery) {
			out = append(out, condition{kind: config.KindSpoolWaiting, counts: map[string]int64{"waiting": int64(waiting)}})
		}
		if quarantined > 0 {
			out = append(out, condition{kind: config.KindSpoolQuarantined, counts: map[string]int64{"quarantined": int64(quarantined)}})
		}
	}
	return out
}

// failing reports whether l's destination fails now; isOpen says its
// incident is open. The lane's stored state is the view of the node that
// wrote it last: a node whose circuit opened keeps that state stored until
// it tries the lane again, another node's first failure can overwrite an
// open circuit, and a node whose attempt was under way when the
// destination came back records its failure after another node's
// success. So the attempts of every node decide, newest (by when they
// started) first: the destination is back when the newest succeeded, and
// failing while the newest failed_attempts of them failed. The stored
// state alone opens an incident only while no attempt on record
// succeeded; when the attempts cannot be read, the incident stays open
// or closed as it is.
func (e *Engine) failing(ctx context.Context, l inbox.LaneState, isOpen bool) bool {
	threshold := e.opts.Alerts.FailedAttempts
	stored := l.State == inbox.LanePaused || l.Failures >= threshold
	if !stored && !isOpen {
		return false
	}
	log, ok := e.opts.Store.(inbox.AttemptLog)
	if !ok {
		return stored
	}
	recent, err := log.RecentAttempts(ctx, l.Destination, recentAttempts)
	switch {
	case err != nil:
		// The state stored may be a node's view from before the
		// destination came back: without the attempts to decide, the
		// incident stays as it is.
		return isOpen
	case len(recent) == 0:
		return stored
	}
	slices.SortStableFunc(recent, func(x, y inbox.Attempt) int { return y.At.Compare(x.At) })
	failed := 0
	for _, a := range recent {
		if delivered(a) {
			break
		}
		failed++
	}
	switch {
	case failed == 0:
		return false
	case failed >= threshold:
		return true
	default:
		return stored && !slices.ContainsFunc(recent, delivered)
	}
}

// delivered reports whether attempt a was answered with a success.
func delivered(a inbox.Attempt) bool { return a.Error == "" && a.Code >= 200 && a.Code < 300 }

// recentAttempts is how many of a destination's newest recorded attempts
// deliveredSince reads: more than one node has in flight when it comes
// back.
const recentAttempts = 64

// sourceConditions are the conditions of one source: events going dead,
// a silence longer than expect_every, refused requests.
func (e *Engine) sourceConditions(s config.Source, stats inbox.Stats, now time.Time, open map[key]inbox.Incident) []condition {
	var out []condition
	st := stats.Sources[s.Name]
	dead := int64(st.ByStatus[inbox.StatusDead])
	before, known := e.dead[s.Name]
	e.dead[s.Name] = dead
	if k := (key{config.KindEventsDead, s.Name, ""}); known && dead > before {
		stored := open[k].Counts
		base, ok := stored[countDeadBefore]
		if !ok {
			base = before
		}
		out = append(out, condition{kind: k.kind, source: s.Name,
			counts: map[string]int64{countDeadBefore: base, "dead": max(dead-base, 0)}})
	}

	seen, ok := e.accepted[s.Name]
	if !ok || seen.n != st.Accepted {
		// The first check, on a node just started, counts the silence
		// from now, and an incident already open stays open until
		// events arrive.
		seen = counterSeen{n: st.Accepted, moved: now, first: !ok}
		e.accepted[s.Name] = seen
	}
	if s.ExpectEvery > 0 && now.Sub(seen.moved) > time.Duration(s.ExpectEvery) {
		out = append(out, condition{kind: config.KindSourceSilent, source: s.Name,
			counts: map[string]int64{"silent_seconds": int64(now.Sub(seen.moved) / time.Second)}})
	}

	if e.opts.Local.Refused != nil {
		window := time.Duration(e.opts.Alerts.AuthWindow)
		samples := append(e.refused[s.Name], sample{now, e.opts.Local.Refused(s.Name)})
		for len(samples) > 1 && now.Sub(samples[1].at) >= window {
			samples = samples[1:]
		}
		e.refused[s.Name] = samples
		if n := samples[len(samples)-1].n - samples[0].n; n >= int64(e.opts.Alerts.AuthFailures) {
			k := key{config.KindSourceAuthFailures, s.Name, ""}
			out = append(out, condition{kind: k.kind, source: s.Name,
				counts: map[string]int64{"refused": max(n, open[k].Counts["refused"])}})
		}
	}
	return out
}

// ended reports whether the open incident inc, whose condition did not
// hold at this check, has ended. What every node reads from the store
// ends at once; what a node sees on its own ends once no node has seen it
// for a quiet spell, so that a node that sees nothing does not end what
// another sees.
func (e *Engine) ended(inc inbox.Incident, stats inbox.Stats, now time.Time) bool {
	check := time.Duration(e.opts.Alerts.CheckEvery)
	switch inc.Kind {
	case config.KindDestinationFailing, config.KindProcessingLag, config.KindReconcileGap:
		return true
	case config.KindSourceSilent:
		// It ends when events arrive; a node that has not seen the
		// counter move since the incident opened cannot tell.
		seen, ok := e.accepted[inc.Source]
		return ok && !seen.first && seen.moved.After(inc.OpenedAt) || !e.expects(inc.Source)
	case config.KindEventsDead:
		return now.Sub(inc.SeenAt) > deadQuiet*check
	case config.KindStoreUnavailable:
		return false
	default:
		return now.Sub(inc.SeenAt) > localQuiet*check
	}
}

// How many checks without a sighting end an incident that nodes see on
// their own, and one of events going dead (which come in bursts: one
// incident while they keep coming).
const (
	localQuiet = 3
	deadQuiet  = 10
)

// expects reports whether the source is configured with expect_every.
func (e *Engine) expects(name string) bool {
	for _, s := range e.opts.Sources {
		if s.Name == name {
			return s.ExpectEvery > 0
		}
	}
	return false
}

// endCounts are the counts an incident ends with. A destination that
// recovers has its backlog still to take: the deliveries that waited
// during the incident (at their peak), less those that went dead, are
// what it gets late.
func (e *Engine) endCounts(inc inbox.Incident, stats inbox.Stats) map[string]int64 {
	if inc.Kind != config.KindDestinationFailing {
		return nil
	}
	dead := max(deadOf(stats, inc.Source)-inc.Counts[countDeadBefore], 0)
	var pending int64
	for _, l := range stats.Lanes {
		if l.Source == inc.Source && l.Destination == inc.Destination {
			pending = int64(l.Pending)
		}
	}
	return map[string]int64{"dead": dead, "delivered_late": max(inc.Counts[countPendingPeak]-dead, 0), "pending": pending}
}

func deadOf(stats inbox.Stats, source string) int64 {
	return int64(stats.Sources[source].ByStatus[inbox.StatusDead])
}

// outage is the store's unavailability as one node sees it. The store
// cannot record it, so the node notifies its Slack and e-mail channels
// itself (each node that sees it), and records the incident once the
// store answers again.
type outage struct {
	since  time.Time
	err    string
	checks int
	told   bool
}

// storeDownAfter is how many failed checks in a row make the store
// unavailable: one can fail on a blip.
const storeDownAfter = 2

func (e *Engine) storeDown(ctx context.Context, now time.Time, err error) {
	if e.down == nil {
		e.down = &outage{since: now}
	}
	e.down.checks++
	e.down.err = redact(err.Error())
	if e.down.checks < storeDownAfter || e.down.told {
		return
	}
	e.down.told = true
	e.log.Error("incident opened: the store is unavailable", "since", e.down.since, "err", e.down.err)
	e.direct(ctx, notify.Message{Type: config.KindStoreUnavailable, Change: notify.Opened, OpenedAt: e.down.since,
		LastError: e.down.err, ConsoleURL: e.opts.Alerts.ConsoleURL})
}

func (e *Engine) storeUp(ctx context.Context, now time.Time) {
	d := e.down
	e.down = nil
	if d == nil || !d.told {
		return
	}
	e.log.Info("incident resolved: the store is available again", "after", now.Sub(d.since).Round(time.Second))
	e.direct(ctx, notify.Message{Type: config.KindStoreUnavailable, Change: notify.Resolved, OpenedAt: d.since, ResolvedAt: &now,
		ConsoleURL: e.opts.Alerts.ConsoleURL})
	// Kept for the record, notified already.
	inc, _, err := e.opts.Incidents.Observe(ctx, inbox.Incident{Kind: config.KindStoreUnavailable, SeenAt: d.since, LastError: d.err}, nil)
	if err == nil {
		_, err = e.opts.Incidents.Resolve(ctx, inc.ID, now, nil, nil)
	}
	if err != nil {
		e.log.Error("alerts: recording the store's outage", "err", err)
	}
}

// credentials match what may carry a secret in an error's URL: its user
// and its query.
var urlInText = regexp.MustCompile(`[a-z][a-z0-9+.-]*://[^\s"']+`)

// redact strips the user and the query of every URL in s: a destination's
// URL may carry a token there, and messages leave the gateway.
func redact(s string) string {
	return urlInText.ReplaceAllStringFunc(s, func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			return "[url]"
		}
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		return u.String()
	})
}
