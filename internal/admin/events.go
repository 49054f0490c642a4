package admin

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/hookgate/hookgate/internal/eventview"
	"github.com/hookgate/hookgate/internal/inbox"
)

// listJSON is the answer of a list: one page and the cursor of the next.
type listJSON struct {
	Events []eventview.Event `json:"events"`
	// Next is the before= of the next page, or its after= when the
	// request read forwards (after=); absent after the last page.
	Next int64 `json:"next,omitempty"`
}

// statuses are the values status= accepts, in the order an event moves
// through them.
var statuses = []inbox.Status{inbox.StatusReceived, inbox.StatusRetry, inbox.StatusDelivering, inbox.StatusProcessed, inbox.StatusDead}

// filter reads source=, tenant=, limit=, before= and after= (and status=
// when withStatus) from the query. With after= a page holds the limit
// oldest events after it, still newest first (inbox.Filter.AfterID): a
// reader following new events asks for after= the largest id it has.
func filter(r *http.Request, withStatus bool) (inbox.Filter, error) {
	q := r.URL.Query()
	f := inbox.Filter{Source: q.Get("source"), Tenant: q.Get("tenant"), Limit: inbox.DefaultLimit}
	if s := q.Get("status"); s != "" {
		if !withStatus {
			return f, badRequest("status: not a filter here")
		}
		f.Status = inbox.Status(s)
		if !slices.Contains(statuses, f.Status) {
			return f, badRequest("status %q: want received, retry, delivering, processed or dead", s)
		}
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			return f, badRequest("limit %q: want 1 to %d", s, MaxLimit)
		}
		f.Limit = n
	}
	if s := q.Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return f, badRequest("before %q: want an event id", s)
		}
		f.BeforeID = n
	}
	if s := q.Get("after"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return f, badRequest("after %q: want an event id", s)
		}
		f.AfterID = n
	}
	return f, nil
}

// list answers one page of the events f selects.
func (a *api) list(w http.ResponseWriter, r *http.Request, f inbox.Filter) error {
	events, err := a.store.List(r.Context(), f)
	if err != nil {
		return err
	}
	views, err := eventview.List(r.Context(), a.store, events)
	if err != nil {
		return err
	}
	out := listJSON{Events: views}
	switch {
	case len(events) < f.Limit:
	case f.AfterID > 0:
		out.Next = events[0].ID
	default:
		out.Next = events[len(events)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) listEvents(w http.ResponseWriter, r *http.Request) error {
	f, err := filter(r, true)
	if err != nil {
		return err
	}
	return a.list(w, r, f)
}

func (a *api) listDead(w http.ResponseWriter, r *http.Request) error {
	f, err := filter(r, false)
	if err != nil {
		return err
	}
	f.Status = inbox.StatusDead
	return a.list(w, r, f)
}

func (a *api) showEvent(w http.ResponseWriter, r *http.Request) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return badRequest("event id %q: want a positive number", r.PathValue("id"))
	}
	raw := false
	switch p := r.URL.Query().Get("payload"); p {
	case "":
	case "base64":
		raw = true
	default:
		return badRequest("payload %q: want base64 (the body as received) or nothing", p)
	}
	d, err := eventview.Load(r.Context(), a.store, id)
	if err != nil {
		return err
	}
	if raw {
		// A JSON payload is written out re-encoded, without the sender's
		// spacing; a reader that passes the body on (hookgate listen)
		// needs its bytes.
		switch {
		case d.Payload != nil:
			d.PayloadBase64, d.Payload = []byte(d.Payload), nil
		case d.PayloadText != "":
			d.PayloadBase64, d.PayloadText = []byte(d.PayloadText), ""
		}
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}
