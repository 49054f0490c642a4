// Package shippofake is a local Shippo API for tests: GET
// /tracks/{carrier}/{tracking_number} as Shippo's reference describes it
// (Authorization: ShippoToken …; the track as a track_updated webhook
// carries it in data; errors as {"detail"}), over tracks a test sets. A
// test can have a request answered 429, as Shippo does past its rate
// limit, and send a track as its track_updated webhook, signed.
package shippofake

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hookgate/hookgate/internal/reconcile/fakeapi"
	"github.com/hookgate/hookgate/verify"
)

// Track is one tracking number's status.
type Track struct {
	Carrier, Number string
	Status          string
	StatusDate      time.Time
}

// Data is the track as Shippo renders it: the answer of GET /tracks and
// the data of its track_updated webhook.
func (t Track) Data() []byte {
	return fmt.Appendf(nil, `{"carrier":%q,"tracking_number":%q,"servicelevel":{"token":"usps_priority","name":"Priority Mail"},`+
		`"tracking_status":{"status":%q,"status_details":"status %s","status_date":%q},"tracking_history":[]}`,
		t.Carrier, t.Number, t.Status, t.Status, t.StatusDate.UTC().Format(time.RFC3339))
}

// Webhook is the track_updated webhook of t.
func (t Track) Webhook() []byte {
	return fmt.Appendf(nil, `{"event":"track_updated","test":false,"data":%s}`, t.Data())
}

// API is the fake API; see New.
type API struct {
	token string
	log   *fakeapi.Log[string] // path

	mu     sync.Mutex
	tracks map[string]Track
}

// errs are Shippo's errors.
var errs = fakeapi.Errors{
	Body:       func(_ int, msg string) any { return map[string]string{"detail": msg} },
	Limited:    "Request was throttled.",
	RetryAfter: "1",
}

// New returns an API that accepts the token token.
func New(token string) *API {
	return &API{token: token, log: fakeapi.NewLog[string](errs), tracks: map[string]Track{}}
}

// Set sets the status Shippo knows of each track's number.
func (a *API) Set(tracks ...Track) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range tracks {
		a.tracks[t.Carrier+"/"+t.Number] = t
	}
}

// RateLimit makes the n-th request (from 1) be answered 429 with
// Retry-After: 1.
func (a *API) RateLimit(n int) { a.log.RateLimit(n) }

// Requests returns every request's path so far, in order.
func (a *API) Requests() []string { return a.log.Requests() }

// Send posts t's webhook to url, signed with secret; it returns the
// status.
func Send(url, secret string, t Track) (int, error) {
	s, err := verify.NewShippo(secret, "")
	if err != nil {
		return 0, err
	}
	return fakeapi.Send(url, s, map[string]string{"Content-Type": "application/json"}, t.Webhook())
}

// carriers are the carriers the API tracks; any other is not found.
var carriers = []string{"usps", "ups", "fedex", "dhl_express", "shippo"}

// ServeHTTP answers GET /tracks/{carrier}/{tracking_number}: the track,
// or for a number it has no track of, the answer Shippo gives a number
// its carrier does not know yet (tracking_status null); 404 for a
// carrier it does not track.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.log.Arrive(w, r, r.URL.Path) {
		return
	}
	if r.Header.Get("Authorization") != "ShippoToken "+a.token {
		errs.Write(w, http.StatusUnauthorized, "Invalid token.")
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if r.Method != http.MethodGet || len(parts) != 3 || parts[0] != "tracks" || parts[1] == "" || parts[2] == "" {
		errs.Write(w, http.StatusNotFound, "Not found.")
		return
	}
	if !slices.Contains(carriers, parts[1]) {
		errs.Write(w, http.StatusNotFound, "Not found.")
		return
	}
	a.mu.Lock()
	t, ok := a.tracks[parts[1]+"/"+parts[2]]
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		fmt.Fprintf(w, `{"carrier":%q,"tracking_number":%q,"tracking_status":null,"tracking_history":[]}`, parts[1], parts[2])
		return
	}
	w.Write(t.Data())
}
