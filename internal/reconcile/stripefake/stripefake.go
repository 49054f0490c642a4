// Package stripefake is a local Stripe API for tests: GET /v1/events as
// Stripe's API reference describes it (newest first, created[gte],
// types[] (at most 20, not with type), limit, starting_after, {"object":
// "list", "has_more", "data"}, errors as {"error": {"type", "message"}}),
// over events a test adds. A test can hold a request until it releases
// it, to stop a run between two pages, have a request answered with an
// error status, as Stripe's rate limit or an outage would answer it, and
// send an event as its webhook, signed.
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

	"github.com/hookgate/hookgate/internal/reconcile/fakeapi"
	"github.com/hookgate/hookgate/verify"
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

// Send posts e to url as its webhook, signed with the endpoint's
// secret; it returns the status.
func Send(url, secret string, e Event) (int, error) {
	s, err := verify.NewStripe(secret)
	if err != nil {
		return 0, err
	}
	return fakeapi.Send(url, s, map[string]string{"Content-Type": "application/json; charset=utf-8"}, e.Body(1))
}

// API is the fake API; its zero value is not usable: see New.
type API struct {
	key string
	log *fakeapi.Log[url.Values]

	mu     sync.Mutex
	events []Event // newest first
}

// errs are Stripe's errors: the type says what failed.
var errs = fakeapi.Errors{
	Body: func(status int, msg string) any {
		typ := "invalid_request_error"
		switch {
		case status == http.StatusTooManyRequests:
			typ = "rate_limit_error"
		case status >= 500:
			typ = "api_error"
		}
		return map[string]any{"error": map[string]string{"type": typ, "message": msg}}
	},
	Limited: "Too many requests hit the API too quickly.",
}

// New returns an API that accepts the restricted key key.
func New(key string) *API {
	return &API{key: key, log: fakeapi.NewLog[url.Values](errs)}
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
func (a *API) Hold(n int) (arrived <-chan struct{}, release func()) { return a.log.Hold(n) }

// Fail makes the n-th request (from 1) be answered status, with
// Retry-After retryAfter unless it is "".
func (a *API) Fail(n, status int, retryAfter string) { a.log.Fail(n, status, retryAfter) }

// Requests returns the query of every request so far, in order.
func (a *API) Requests() []url.Values { return a.log.Requests() }

// ServeHTTP answers GET /v1/events.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.log.Arrive(w, r, r.URL.Query()) {
		return
	}
	if r.Method != http.MethodGet || r.URL.Path != "/v1/events" {
		errs.Write(w, http.StatusNotFound, "Unrecognized request URL")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+a.key {
		errs.Write(w, http.StatusUnauthorized, "Invalid API Key provided")
		return
	}
	q := r.URL.Query()
	limit, ok := fakeapi.PageSize(q, "limit", 10, 100)
	if !ok {
		errs.Write(w, http.StatusBadRequest, "limit must be between 1 and 100")
		return
	}
	types := q["types[]"]
	if len(types) > 20 {
		errs.Write(w, http.StatusBadRequest, "types: at most 20")
		return
	}
	if len(types) > 0 && q.Has("type") {
		errs.Write(w, http.StatusBadRequest, "You may pass either type or types, but not both.")
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
			errs.Write(w, http.StatusBadRequest, "No such event: '"+after+"'")
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
	fakeapi.JSON(w, http.StatusOK, map[string]any{"object": "list", "url": "/v1/events", "has_more": more, "data": data})
}
