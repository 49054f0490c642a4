package console

import (
	"context"
	"net/http"
	"strconv"

	"github.com/hookgate/hookgate/internal/inbox"
)

// maxCounted is how many events counting a replay's filter pages through
// when the counters cannot answer (a tenant filter); beyond it the count
// reads "at least".
const maxCounted = 10_000

// replayData is what the replay form and its result show.
type replayData struct {
	IDs         []int64
	Dead        bool
	Source      string
	Tenant      string
	Redeliver   bool
	Destination string
	// FailedTo narrows a replay of the dead events to those whose
	// delivery to this destination failed (its page's Redeliver failed
	// events).
	FailedTo string
	// Count is how many events the replay selects; AtLeast when counting
	// stopped at maxCounted.
	Count   int
	AtLeast bool
	// Done reports that the replay ran; Replayed is how many it put back
	// (events held by a worker at that moment are skipped).
	Done     bool
	Replayed int
}

// readReplay reads a replay from the form: ids (one or more id fields),
// or the dead events of a source and tenant (dead=1), optionally those a
// destination failed (failed_to), with redeliver and an optional
// destination.
func readReplay(r *http.Request) (replayData, error) {
	f := r.PostForm
	d := replayData{Dead: f.Get("dead") == "1", Source: f.Get("source"), Tenant: f.Get("tenant"),
		Redeliver: f.Get("redeliver") == "1", Destination: f.Get("destination"), FailedTo: f.Get("failed_to")}
	for _, s := range f["id"] {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id < 1 {
			return d, badRequest("id %q: want an event id", s)
		}
		d.IDs = append(d.IDs, id)
	}
	if len(d.IDs) == 0 && !d.Dead {
		return d, badRequest("nothing selected: pick events, or replay the dead list's filter")
	}
	if len(d.IDs) > 0 && d.Dead {
		return d, badRequest("pick events or the dead list's filter, not both")
	}
	if d.FailedTo != "" && !d.Dead {
		return d, badRequest("failed_to %q: only a replay of dead events names the destination that failed them", d.FailedTo)
	}
	if d.Destination != "" && !d.Redeliver {
		return d, badRequest("destination %q: only a redelivery names a destination; tick redeliver", d.Destination)
	}
	return d, nil
}

// filter is the store's form of the replay.
func (d replayData) filter() inbox.ReplayFilter {
	return inbox.ReplayFilter{Dead: d.Dead, Source: d.Source, Tenant: d.Tenant, IDs: d.IDs,
		Redeliver: d.Redeliver, Destination: d.Destination, FailedTo: d.FailedTo}
}

// replay shows how many events a replay selects, and runs it once the
// form comes back confirmed.
func (c *console) replay(w http.ResponseWriter, r *http.Request, sess *session) error {
	d, err := readReplay(r)
	if err != nil {
		return err
	}
	if r.PostForm.Get("confirm") == "1" {
		if d.Replayed, err = c.store.Replay(r.Context(), d.filter(), nil); err != nil {
			return err
		}
		d.Done = true
	} else if d.Count, d.AtLeast, err = c.countReplay(r.Context(), d); err != nil {
		return err
	}
	return c.render(w, "replay", page{Title: "Replay", Nav: "dead", CSRF: sess.csrf, Data: d})
}

// countReplay counts the events a replay selects: the ids given, or the
// dead events of the filter, from the counters when neither a tenant nor
// a failed destination narrows it and by paging the dead list (and, for
// a failed destination, its page's deliveries) otherwise.
func (c *console) countReplay(ctx context.Context, d replayData) (int, bool, error) {
	if len(d.IDs) > 0 {
		return len(d.IDs), false, nil
	}
	if d.Tenant == "" && d.FailedTo == "" {
		st, err := c.store.Stats(ctx)
		if err != nil {
			return 0, false, err
		}
		n := 0
		for name, s := range st.Sources {
			if d.Source == "" || d.Source == name {
				n += s.ByStatus[inbox.StatusDead]
			}
		}
		return n, false, nil
	}
	f := inbox.Filter{Source: d.Source, Tenant: d.Tenant, Status: inbox.StatusDead, Limit: 1000}
	n, read := 0, 0
	for read < maxCounted {
		events, err := c.store.List(ctx, f)
		if err != nil {
			return 0, false, err
		}
		read += len(events)
		if d.FailedTo == "" {
			n += len(events)
		} else if len(events) > 0 {
			ids := make([]int64, len(events))
			for i, e := range events {
				ids[i] = e.ID
			}
			byEvent, err := c.store.Deliveries(ctx, ids)
			if err != nil {
				return 0, false, err
			}
			for _, id := range ids {
				if byEvent[id][d.FailedTo].Status == inbox.DeliveryFailed {
					n++
				}
			}
		}
		if len(events) < f.Limit {
			return n, false, nil
		}
		f.BeforeID = events[len(events)-1].ID
	}
	return n, true, nil
}
