package console

import (
	"context"
	"net/http"
	"slices"

	"github.com/hookgate/hookgate/internal/alert"
	"github.com/hookgate/hookgate/internal/inbox"
)

// IncidentsShown is how many incidents the incidents page lists, open
// ones first.
const IncidentsShown = 200

// incidentRow is an incident as the console shows it.
type incidentRow struct {
	inbox.Incident
	// Counts leaves out the engine's own bookkeeping.
	Counts map[string]int64
	// Events links to the events it is about.
	Events string
}

func incidentRows(list []inbox.Incident) []incidentRow {
	out := make([]incidentRow, len(list))
	for i, inc := range list {
		r := incidentRow{Incident: inc, Counts: alert.Counts(inc.Counts)}
		switch {
		case inc.Destination != "":
			r.Events = "/ui/destinations/" + inc.Destination
		case inc.Kind == "events.dead":
			r.Events = "/ui/dead?source=" + inc.Source
		case inc.Source != "":
			r.Events = "/ui/events?source=" + inc.Source
		}
		out[i] = r
	}
	return out
}

// incidentsPage lists the incidents: the open ones, then the ended ones,
// newest first.
func (c *console) incidentsPage(w http.ResponseWriter, r *http.Request, sess *session) error {
	inc, ok := c.store.(inbox.Incidents)
	if !ok {
		return &httpError{code: http.StatusNotFound, msg: "this store keeps no incidents"}
	}
	list, err := inc.ListIncidents(r.Context(), true, IncidentsShown)
	if err != nil {
		return err
	}
	return c.render(w, "incidents", page{Title: "Incidents", Nav: "incidents", CSRF: sess.csrf, Data: incidentRows(list)})
}

// openIncidents returns the open incidents that keep, nil when the store
// keeps none or cannot be read (a page shows without them).
func (c *console) openIncidents(ctx context.Context, keep func(inbox.Incident) bool) []incidentRow {
	inc, ok := c.store.(inbox.Incidents)
	if !ok {
		return nil
	}
	list, err := inc.ListIncidents(ctx, false, IncidentsShown)
	if err != nil {
		c.log.Warn("console: reading incidents", "err", err)
		return nil
	}
	return incidentRows(slices.DeleteFunc(list, func(i inbox.Incident) bool { return !keep(i) }))
}
