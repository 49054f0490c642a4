package console

import (
	"net/http"
	"slices"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/provider"
)

// RecoveredShown is how many of a run's recovered events the
// reconciliation page links, newest first.
const RecoveredShown = 50

// reconcileRow is one source's reconciliation as the console shows it.
type reconcileRow struct {
	inbox.Checkpoint
	// Recovered are the events the last run recovered, newest first, at
	// most RecoveredShown.
	Recovered []inbox.Event
	// RecoveredNote and FailedNote say what the run's counts mean for
	// the source's provider.
	RecoveredNote, FailedNote string
}

// reconcilePage shows, per reconciled source, its checkpoint, its last
// run (what it listed, already had, recovered and failed, and why it
// failed), a run a stop interrupted, and the events the last run
// recovered.
func (c *console) reconcilePage(w http.ResponseWriter, r *http.Request, sess *session) error {
	rec, ok := c.store.(inbox.Reconciliations)
	if !ok {
		return &httpError{code: http.StatusNotFound, msg: "this store keeps no reconciliations"}
	}
	cps, err := rec.Checkpoints(r.Context())
	if err != nil {
		return err
	}
	rows := make([]reconcileRow, len(cps))
	for i, cp := range cps {
		rows[i].Checkpoint = cp
		var prov string
		if j := slices.IndexFunc(c.sources, func(s config.Source) bool { return s.Name == cp.Source }); j >= 0 {
			prov = c.sources[j].Provider
		}
		rows[i].RecoveredNote, rows[i].FailedNote = provider.RecoveredNote(prov), provider.FailedNote(prov)
		if cp.Last.Recovered == 0 || cp.Last.Started.IsZero() {
			continue
		}
		// A run's recovered events were received during it: the
		// source's events since it started that came via reconcile.
		evs, err := c.store.List(r.Context(), inbox.Filter{Source: cp.Source, Since: cp.Last.Started, Limit: inbox.DefaultLimit * 10})
		if err != nil {
			return err
		}
		evs = slices.DeleteFunc(evs, func(e inbox.Event) bool { return e.Via != inbox.ViaReconcile })
		rows[i].Recovered = evs[:min(len(evs), RecoveredShown)]
	}
	return c.render(w, "reconcile", page{Title: "Reconciliation", Nav: "reconcile", CSRF: sess.csrf, Data: rows})
}
