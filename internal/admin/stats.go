package admin

import (
	"maps"
	"net/http"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// Stats is the JSON form of [inbox.Stats], as GET /api/stats and
// `hookgate stats --json` answer it.
type Stats struct {
	// Sources holds each source's counts, by name.
	Sources map[string]SourceStats `json:"sources"`
	// Pending counts open events: received, in retry or delivering.
	Pending int `json:"pending"`
	// OldestPending is when the oldest pending event was received; absent
	// when none is pending.
	OldestPending time.Time `json:"oldest_pending,omitzero"`
	// OldestPendingSeconds is that event's age; 0 when none is pending.
	OldestPendingSeconds float64 `json:"oldest_pending_seconds"`
	// Lanes are the (source, destination) pairs processing has a state
	// for or that have deliveries pending, by source then destination.
	Lanes []Lane `json:"lanes"`
}

// Lane is the health of one destination of one source, as processing
// last saw it.
type Lane struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	// State is healthy, failing (attempts fail, not yet paused) or paused
	// (the circuit is open: no attempts until Until).
	State string `json:"state"`
	// Failures counts consecutive failed attempts.
	Failures int `json:"failures"`
	// Until is when a paused lane is probed again; absent unless paused.
	Until     time.Time `json:"until,omitzero"`
	LastError string    `json:"last_error,omitempty"`
	// Changed is when the state last changed; absent before processing
	// recorded one.
	Changed time.Time `json:"changed,omitzero"`
	// Pending counts the lane's deliveries not yet delivered or failed.
	Pending int `json:"pending"`
	// Held is true while an operator holds the lane (the console's
	// Pause): none of its deliveries is made, whatever State says.
	Held bool `json:"held,omitempty"`
	// Blocked counts the keys of an ordered destination (order: entity,
	// on_exhausted: block) that wait for an operator to replay their dead
	// event.
	Blocked int `json:"blocked,omitempty"`
}

// SourceStats are one source's counts.
type SourceStats struct {
	// ByStatus counts stored events by status; every status is present.
	ByStatus map[inbox.Status]int `json:"by_status"`
	// Accepted and Duplicates count intake outcomes.
	Accepted   int64 `json:"accepted"`
	Duplicates int64 `json:"duplicates"`
	// DedupeHitRate is Duplicates / (Accepted + Duplicates): the share of
	// deliveries that were repeats; 0 before any.
	DedupeHitRate float64 `json:"dedupe_hit_rate"`
}

// NewStats returns the JSON form of s, with ages measured at now.
func NewStats(s inbox.Stats, now time.Time) Stats {
	out := Stats{Sources: make(map[string]SourceStats, len(s.Sources)), Pending: s.Pending, Lanes: make([]Lane, len(s.Lanes))}
	for i, l := range s.Lanes {
		out.Lanes[i] = Lane{Source: l.Source, Destination: l.Destination, State: l.State, Failures: l.Failures,
			LastError: l.LastError, Changed: l.Changed, Pending: l.Pending, Held: l.Held, Blocked: l.Blocked}
		if l.State == inbox.LanePaused {
			out.Lanes[i].Until = l.Until
		}
	}
	if !s.OldestPending.IsZero() {
		out.OldestPending = s.OldestPending
		out.OldestPendingSeconds = max(now.Sub(s.OldestPending).Seconds(), 0)
	}
	for name, ss := range s.Sources {
		v := SourceStats{ByStatus: make(map[inbox.Status]int, len(statuses)), Accepted: ss.Accepted, Duplicates: ss.Duplicates}
		for _, st := range statuses {
			v.ByStatus[st] = 0
		}
		maps.Copy(v.ByStatus, ss.ByStatus)
		if total := ss.Accepted + ss.Duplicates; total > 0 {
			v.DedupeHitRate = float64(ss.Duplicates) / float64(total)
		}
		out.Sources[name] = v
	}
	return out
}

func (a *api) stats(w http.ResponseWriter, r *http.Request) error {
	s, err := a.store.Stats(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, NewStats(s, time.Now()))
	return nil
}
