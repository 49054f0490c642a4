package admin

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// eventJSON is the JSON form of an event. Headers, payload and deliveries
// are only in the answer for one event.
type eventJSON struct {
	ID            int64             `json:"id"`
	Key           string            `json:"key"`
	Scope         string            `json:"scope"`
	Source        string            `json:"source"`
	Provider      string            `json:"provider"`
	Tenant        string            `json:"tenant"`
	EventID       string            `json:"event_id"`
	Status        inbox.Status      `json:"status"`
	ReceivedAt    time.Time         `json:"received_at"`
	EntityType    string            `json:"entity_type,omitempty"`
	EntityID      string            `json:"entity_id,omitempty"`
	EntityVersion string            `json:"entity_version,omitempty"`
	EntityState   string            `json:"entity_state,omitempty"`
	Attempts      int               `json:"attempts"`
	NextAttemptAt time.Time         `json:"next_attempt_at,omitzero"`
	LastError     string            `json:"last_error,omitempty"`
	ProcessedAt   time.Time         `json:"processed_at,omitzero"`
	Applied       *appliedJSON      `json:"applied,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	Payload       json.RawMessage   `json:"payload,omitempty"`
	PayloadText   string            `json:"payload_text,omitempty"`
	Deliveries    []deliveryJSON    `json:"deliveries,omitzero"`
}

// appliedJSON is the JSON form of an event's entity apply.
type appliedJSON struct {
	Outcome    inbox.ApplyOutcome `json:"outcome"`
	From       string             `json:"from"`
	To         string             `json:"to"`
	Transition bool               `json:"transition"`
}

// deliveryJSON is the JSON form of one delivery record.
type deliveryJSON struct {
	Destination string               `json:"destination"`
	Status      inbox.DeliveryStatus `json:"status"`
	Attempts    int                  `json:"attempts"`
	Code        int                  `json:"code,omitempty"`
	Error       string               `json:"error,omitempty"`
	At          time.Time            `json:"at,omitzero"`
}

// listJSON is the answer of a list: one page and the cursor of the next.
type listJSON struct {
	Events []eventJSON `json:"events"`
	// Next is the before= of the next page; absent after the last page.
	Next int64 `json:"next,omitempty"`
}

func toEventJSON(e inbox.Event) eventJSON {
	j := eventJSON{
		ID: e.ID, Key: e.Hash.String(), Scope: e.Scope, Source: e.Source, Provider: e.Provider,
		Tenant: e.Tenant, EventID: e.EventID, Status: e.Status, ReceivedAt: e.ReceivedAt,
		EntityType: e.EntityType, EntityID: e.EntityID, EntityVersion: e.EntityVersion, EntityState: e.EntityState,
		Attempts: e.Attempts, NextAttemptAt: e.NextAttemptAt, LastError: e.LastError, ProcessedAt: e.ProcessedAt,
	}
	if e.Applied != nil {
		j.Applied = &appliedJSON{Outcome: e.Applied.Outcome, From: e.Applied.From, To: e.Applied.To, Transition: e.Applied.Transition}
	}
	return j
}

// statuses are the values status= accepts.
var statuses = []inbox.Status{inbox.StatusReceived, inbox.StatusRetry, inbox.StatusProcessed, inbox.StatusDead}

// filter reads source=, tenant=, limit= and before= (and status= when
// withStatus) from the query.
func filter(r *http.Request, withStatus bool) (inbox.Filter, error) {
	q := r.URL.Query()
	f := inbox.Filter{Source: q.Get("source"), Tenant: q.Get("tenant"), Limit: inbox.DefaultLimit}
	if s := q.Get("status"); s != "" {
		if !withStatus {
			return f, badRequest("status: not a filter here")
		}
		f.Status = inbox.Status(s)
		if !slices.Contains(statuses, f.Status) {
			return f, badRequest("status %q: want received, retry, processed or dead", s)
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
	return f, nil
}

// list answers one page of the events f selects.
func (a *api) list(w http.ResponseWriter, r *http.Request, f inbox.Filter) error {
	events, err := a.store.List(r.Context(), f)
	if err != nil {
		return err
	}
	out := listJSON{Events: make([]eventJSON, len(events))}
	for i, e := range events {
		out.Events[i] = toEventJSON(e)
	}
	if len(events) == f.Limit {
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
	e, err := a.store.Get(r.Context(), id)
	if err != nil {
		return err
	}
	byDest, err := a.store.Deliveries(r.Context(), []int64{id})
	if err != nil {
		return err
	}
	j := toEventJSON(e)
	j.Headers = e.Headers
	if json.Valid(e.Payload) {
		j.Payload = e.Payload
	} else {
		j.PayloadText = string(e.Payload)
	}
	j.Deliveries = []deliveryJSON{}
	for _, d := range byDest[id] {
		j.Deliveries = append(j.Deliveries, deliveryJSON{
			Destination: d.Destination, Status: d.Status, Attempts: d.Attempts, Code: d.Code, Error: d.Error, At: d.At,
		})
	}
	slices.SortFunc(j.Deliveries, func(x, y deliveryJSON) int { return strings.Compare(x.Destination, y.Destination) })
	writeJSON(w, http.StatusOK, j)
	return nil
}
