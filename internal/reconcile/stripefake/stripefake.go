// Package stripefake is a local Stripe API for tests: GET /v1/events as
// Stripe's API reference describes it (newest first, created[gte],
// types[], limit, starting_after, {"object": "list", "has_more",
// "data"}, errors as {"error": {"type", "message"}}), over events a test
// adds. A test can hold a request until it releases it, to stop a run
// between two pages.
package stripefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Event is one event the API lists.
type Event struct {
	ID, Type string
	Created  time.Time
	// Object is the id of the object the event is about; "" derives
	// one from the event id.
	Object string
}

// Body is the event as Stripe renders it, with pending_webhooks as given
// (the webhook's copy and the listing's may differ there).
func (e Event) Body(pending int) []byte {
	obj, _, _ := strings.Cut(e.Type, ".")
	id := e.Object
	if id == "" {
		id = obj + "_" + strings.TrimPrefix(e.ID, "evt_")
	}
	return fmt.Appendf(nil, `{"id":%q,"object":"event","api_version":"2024-06-20","created":%d,"data":{"object":{"id":%q,"object":%q,"status":"succeeded"}},"livemode":false,"pending_webhooks":%d,"request":{"id":null,"idempotency_key":null},"type":%q}`,
		e.ID, e.Created.Unix(), id, obj, pending, e.Type)
}

// API is the fake API; its zero value is not usable: see New.
type API struct {
	key string

	mu       sync.Mutex
	events   []Event // newest first
	requests []url.Values
	holds    map[int]chan struct{}
	arrived  map[int]chan struct{}
}

// New returns an API that accepts the restricted key key.
func New(key string) *API {
	return &API{key: key, holds: map[int]chan struct{}{}, arrived: map[int]chan struct{}{}}
}

// Add adds events, in any order.
func (a *API) Add(events ...Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, events...)
	slices.SortStableFunc(a.events, func(x, y Event) int { return y.Created.Compare(x.Created) })
}

// Hold makes the n-th request (from 1) wait until release is called;
// arrived is closed when it comes.
func (a *API) Hold(n int) (arrived <-chan struct{}, release func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	held, came := make(chan struct{}), make(chan struct{})
	a.holds[n], a.arrived[n] = held, came
	return came, sync.OnceFunc(func() { close(held) })
}

// Requests returns the query of every request so far, in order.
func (a *API) Requests() []url.Values {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.requests)
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"type": typ, "message": msg}})
}

// ServeHTTP answers GET /v1/events.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.requests = append(a.requests, r.URL.Query())
	n := len(a.requests)
	held, came := a.holds[n], a.arrived[n]
	a.mu.Unlock()
	if held != nil {
		close(came)
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
	}
	if r.Method != http.MethodGet || r.URL.Path != "/v1/events" {
		apiError(w, http.StatusNotFound, "invalid_request_error", "Unrecognized request URL")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+a.key {
		apiError(w, http.StatusUnauthorized, "invalid_request_error", "Invalid API Key provided")
		return
	}
	q := r.URL.Query()
	limit := 10
	if v := q.Get("limit"); v != "" {
		l, err := strconv.Atoi(v)
		if err != nil || l < 1 || l > 100 {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "limit must be between 1 and 100")
			return
		}
		limit = l
	}
	types := q["types[]"]
	if len(types) > 20 {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "types: at most 20")
		return
	}
	var gte int64
	if v := q.Get("created[gte]"); v != "" {
		gte, _ = strconv.ParseInt(v, 10, 64)
	}
	a.mu.Lock()
	var listed []Event
	for _, e := range a.events {
		if e.Created.Unix() >= gte && (len(types) == 0 || slices.Contains(types, e.Type)) {
			listed = append(listed, e)
		}
	}
	a.mu.Unlock()
	if after := q.Get("starting_after"); after != "" {
		i := slices.IndexFunc(listed, func(e Event) bool { return e.ID == after })
		if i < 0 {
			apiError(w, http.StatusBadRequest, "invalid_request_error", "No such event: '"+after+"'")
			return
		}
		listed = listed[i+1:]
	}
	more := len(listed) > limit
	listed = listed[:min(limit, len(listed))]
	data := make([]json.RawMessage, len(listed))
	for i, e := range listed {
		data[i] = e.Body(0)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "url": "/v1/events", "has_more": more, "data": data})
}
