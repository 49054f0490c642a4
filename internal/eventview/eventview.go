package eventview

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/hookgate/hookgate/internal/inbox"
)

// Reader is what building a view reads from the inbox; [inbox.Store] has
// it.
type Reader interface {
	Get(ctx context.Context, id int64) (inbox.Event, error)
	Deliveries(ctx context.Context, ids []int64) (map[int64]map[string]inbox.Delivery, error)
	Attempts(ctx context.Context, id int64) ([]inbox.Attempt, error)
	Entity(ctx context.Context, tenant, typ, id string) (inbox.Entity, error)
}

// Event is a stored event as a list shows it.
type Event struct {
	// ID is the event's inbox id.
	ID int64 `json:"id"`
	// Key is the dedupe hash, in hex.
	Key string `json:"key"`
	// Scope is the readable form of the dedupe key.
	Scope    string `json:"scope"`
	Source   string `json:"source"`
	Provider string `json:"provider"`
	Tenant   string `json:"tenant"`
	// EventID is the provider's id of the event.
	EventID string `json:"event_id"`
	// Type is the provider's name for what happened (charge.succeeded,
	// push); absent when the source does not know it.
	Type       string       `json:"type,omitempty"`
	ReceivedAt time.Time    `json:"received_at"`
	Status     inbox.Status `json:"status"`
	// Via is "reconcile" for an event a reconciliation recovered (the
	// provider listed it and no webhook of it came); absent for one that
	// came through intake.
	Via string `json:"via,omitempty"`
	// The entity fields are what the event says of its entity; empty when
	// the source does not know them.
	EntityType    string `json:"entity_type,omitempty"`
	EntityID      string `json:"entity_id,omitempty"`
	EntityVersion string `json:"entity_version,omitempty"`
	EntityState   string `json:"entity_state,omitempty"`
	// Applied is what applying the event to its entity did: applied,
	// unchanged, stale, or none. None means the event names no entity,
	// and also that it has not been applied yet (status received or
	// retry before its first successful apply).
	Applied inbox.ApplyOutcome `json:"applied"`
	// Transition is "from->to" when applying the event changed its
	// entity's state (from is empty for a new entity), "" otherwise.
	Transition string `json:"transition"`
	// Tie is true when the event's version equalled the stored entity's:
	// it was applied (or left the state to a later arrival of the same
	// version) in arrival order, not by its version.
	Tie bool `json:"tie"`
	// Attempts counts the delivery attempts of the event's current
	// deliveries, summed over its destinations: the attempts since it was
	// received or last replayed. The attempt log of [Detail] keeps every
	// attempt, across replays.
	Attempts int `json:"attempts"`
	// ProcessingAttempts counts the times a worker took the event to
	// validate and apply it.
	ProcessingAttempts int `json:"processing_attempts"`
	// NextAttemptAt is when an event in retry is processed again.
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	// LastError is why the event is dead or in retry; for an event still
	// delivering, the newest error of a delivery, as "destination: error".
	// Empty when nothing failed.
	LastError   string    `json:"last_error"`
	ProcessedAt time.Time `json:"processed_at,omitzero"`
}

// Detail is one event with everything stored about it.
type Detail struct {
	Event
	Headers map[string]string `json:"headers"`
	// The body as received is in exactly one of these: Payload when it
	// is JSON, PayloadText when it is other text (valid UTF-8), and
	// PayloadBase64 otherwise. JSON output is UTF-8, so a body that is not
	// is shown base64-encoded (payload_base64) rather than with its
	// invalid bytes written raw or replaced.
	Payload       json.RawMessage `json:"payload,omitempty"`
	PayloadText   string          `json:"payload_text,omitempty"`
	PayloadBase64 []byte          `json:"payload_base64,omitempty"`
	// Entity is the entity's state as stored now (possibly written by a
	// newer event); nil when the event names no entity or none is stored.
	Entity *Entity `json:"entity,omitempty"`
	// Deliveries has one entry per destination the event is for or was
	// tried on, by destination name.
	Deliveries []Delivery `json:"deliveries"`
}

// Entity is the stored state of one entity.
type Entity struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Version string `json:"version"`
	State   string `json:"state"`
	// WrittenBy is the inbox id of the event that last wrote the entity.
	WrittenBy int64     `json:"written_by"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Delivery is where delivering the event to one destination stands, with
// every attempt made.
type Delivery struct {
	Destination string `json:"destination"`
	// Status is pending, delivered or failed; empty when only the attempt
	// log knows the destination: the event was replayed and its
	// deliveries start over once a worker processes it again.
	Status inbox.DeliveryStatus `json:"status,omitempty"`
	// Attempts counts the attempts since the event was last replayed.
	Attempts int `json:"attempts"`
	// NextAttemptAt is when a pending delivery is due; absent when due now.
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	// Code and Error are the HTTP status and error of the last attempt.
	Code  int    `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
	// At is when the last attempt was made.
	At time.Time `json:"at,omitzero"`
	// Log is every attempt the attempt log keeps, oldest first.
	Log []Attempt `json:"log"`
}

// Attempt is one try to deliver the event.
type Attempt struct {
	At         time.Time `json:"at"`
	DurationMS float64   `json:"duration_ms"`
	// Code is the HTTP status; absent when no response came back.
	Code  int    `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
	// Body is the start of the response body, as text.
	Body string `json:"body,omitempty"`
}

// New returns the list view of e, whose delivery records (by destination;
// nil when it has none) give its attempt count and, while it is open, its
// last error.
func New(e inbox.Event, deliveries map[string]inbox.Delivery) Event {
	v := Event{
		ID: e.ID, Key: e.Hash.String(), Scope: e.Scope, Source: e.Source, Provider: e.Provider,
		Tenant: e.Tenant, EventID: e.EventID, Type: e.Type, ReceivedAt: e.ReceivedAt, Status: e.Status, Via: e.Via,
		EntityType: e.EntityType, EntityID: e.EntityID, EntityVersion: e.EntityVersion, EntityState: e.EntityState,
		Applied: inbox.ApplyNone, ProcessingAttempts: e.Attempts, LastError: e.LastError, ProcessedAt: e.ProcessedAt,
	}
	if e.Status == inbox.StatusRetry {
		v.NextAttemptAt = e.NextAttemptAt
	}
	if a := e.Applied; a != nil {
		v.Applied, v.Tie = a.Outcome, a.Tie
		if a.Transition {
			v.Transition = a.From + "->" + a.To
		}
	}
	var newest inbox.Delivery
	for _, name := range slices.Sorted(maps.Keys(deliveries)) {
		d := deliveries[name]
		v.Attempts += d.Attempts
		if d.Error != "" && d.Status != inbox.DeliveryDelivered && d.At.After(newest.At) {
			newest = d
		}
	}
	if v.LastError == "" && newest.Error != "" {
		v.LastError = newest.Destination + ": " + newest.Error
	}
	return v
}

// List returns the list views of events, in their order, reading their
// deliveries in one call.
func List(ctx context.Context, r Reader, events []inbox.Event) ([]Event, error) {
	ids := make([]int64, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	byEvent, err := r.Deliveries(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Event, len(events))
	for i, e := range events {
		out[i] = New(e, byEvent[e.ID])
	}
	return out, nil
}

// Load returns the full view of event id; the error matches
// [inbox.ErrNotFound] when there is no such event.
func Load(ctx context.Context, r Reader, id int64) (Detail, error) {
	e, err := r.Get(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	byEvent, err := r.Deliveries(ctx, []int64{id})
	if err != nil {
		return Detail{}, err
	}
	log, err := r.Attempts(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	d := Detail{Event: New(e, byEvent[id]), Headers: e.Headers, Deliveries: deliveries(byEvent[id], log)}
	if d.Headers == nil {
		d.Headers = map[string]string{}
	}
	switch {
	case !utf8.Valid(e.Payload):
		// json.Valid accepts invalid UTF-8 inside strings, and a
		// RawMessage is written out as it is.
		d.PayloadBase64 = e.Payload
	case json.Valid(e.Payload):
		d.Payload = e.Payload
	default:
		d.PayloadText = string(e.Payload)
	}
	if e.EntityID != "" {
		ent, err := r.Entity(ctx, e.Tenant, e.EntityType, e.EntityID)
		switch {
		case err == nil:
			d.Entity = &Entity{Type: ent.Type, ID: ent.ID, Version: ent.Version, State: ent.State,
				WrittenBy: ent.EventID, UpdatedAt: ent.UpdatedAt}
		case !errors.Is(err, inbox.ErrNotFound):
			return Detail{}, err
		}
	}
	return d, nil
}

// deliveries joins the delivery records and the attempt log by
// destination, sorted by name.
func deliveries(records map[string]inbox.Delivery, log []inbox.Attempt) []Delivery {
	byName := map[string]*Delivery{}
	get := func(name string) *Delivery {
		d := byName[name]
		if d == nil {
			d = &Delivery{Destination: name, Log: []Attempt{}}
			byName[name] = d
		}
		return d
	}
	for name, r := range records {
		d := get(name)
		d.Status, d.Attempts, d.Code, d.Error, d.At = r.Status, r.Attempts, r.Code, r.Error, r.At
		if r.Status == inbox.DeliveryPending {
			d.NextAttemptAt = r.NextAttemptAt
		}
	}
	for _, a := range log {
		d := get(a.Destination)
		d.Log = append(d.Log, Attempt{At: a.At, DurationMS: float64(a.Duration) / float64(time.Millisecond),
			Code: a.Code, Error: a.Error, Body: a.Body})
	}
	out := make([]Delivery, 0, len(byName))
	for _, d := range byName {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b Delivery) int { return cmp.Compare(a.Destination, b.Destination) })
	return out
}
