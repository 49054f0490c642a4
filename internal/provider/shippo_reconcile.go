package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// shippoPageSize is how many open tracking numbers one page asks about.
const shippoPageSize = 100

// shippoFinal are the tracking statuses after which Shippo sends no more
// track_updated webhooks.
var shippoFinal = []string{"DELIVERED", "RETURNED", "FAILURE"}

// shippoReconciler asks Shippo, for each tracking number of the source
// that is not in a final status, its status now (GET
// /tracks/{carrier}/{tracking_number}). The answer is what a
// track_updated webhook carries as its data, so each is offered as that
// webhook: keyed by carrier, number, status and status date, a state the
// webhook brought is a duplicate, and the version guard applies a newer
// one.
type shippoReconciler struct {
	api *apiClient
}

// newShippoReconciler builds the Shippo reconciler, with an API token.
func newShippoReconciler(c ReconcileConfig) (Reconciler, error) {
	if c.Key == "" {
		return nil, errors.New("shippo reconcile: no token: want a Shippo API token (shippo_live_… or shippo_test_…)")
	}
	api, err := newAPIClient(c, "https://api.goshippo.com", http.Header{"Authorization": {"ShippoToken " + c.Key}})
	if err != nil {
		return nil, fmt.Errorf("shippo reconcile: %w", err)
	}
	api.message = func(body []byte) string { return fieldMessage(body, "detail") }
	api.refused = map[int]string{
		http.StatusUnauthorized: "the API token was refused",
		http.StatusForbidden:    "the API token was refused",
	}
	return &shippoReconciler{api: api}, nil
}

// shippoTrack is what the reconciler reads of a track_updated webhook's
// data, the answer of GET /tracks/{carrier}/{tracking_number}.
type shippoTrack struct {
	Carrier        string `json:"carrier"`
	TrackingNumber string `json:"tracking_number"`
	TrackingStatus *struct {
		Status     string `json:"status"`
		StatusDate string `json:"status_date"`
	} `json:"tracking_status"`
}

// List asks about the open tracking numbers a page of q.Open at a time;
// a page's Next is the last entity asked about. q.Since does not matter:
// every open number is asked about, whenever its last update came.
func (s *shippoReconciler) List(ctx context.Context, q ListQuery, page func(Page) error) error {
	if q.Open == nil {
		return errors.New("shippo reconcile: the database cannot list the open tracking numbers")
	}
	var after EntityRef
	if q.After != "" {
		if err := json.Unmarshal([]byte(q.After), &after); err != nil {
			return fmt.Errorf("shippo reconcile: resume after %q: %w", q.After, err)
		}
	}
	for {
		open, err := q.Open(ctx, after, shippoPageSize)
		if err != nil {
			return err
		}
		var p Page
		for _, e := range open {
			d, ok, err := s.track(ctx, e)
			switch {
			case err != nil && (!errors.Is(err, ErrRefused) || credentialRefused(err)):
				return err
			case err != nil:
				p.Deliveries = append(p.Deliveries, Delivery{ID: e.ID, Type: "track_updated", Err: err})
			case ok:
				p.Deliveries = append(p.Deliveries, d)
			}
		}
		if len(open) == shippoPageSize {
			after = open[len(open)-1].EntityRef
			next, err := json.Marshal(after)
			if err != nil {
				return err
			}
			p.Next = string(next)
		}
		if err := page(p); err != nil {
			return err
		}
		if p.Next == "" {
			return nil
		}
	}
}

// track asks Shippo about the tracking number of e, whose carrier the
// event that wrote it says, and returns the answer as the webhook; false
// when Shippo knows no status of it yet. An error wrapping ErrRefused,
// but for a refused token, concerns e alone: its event names no carrier,
// or Shippo refused the number (a carrier it does not know).
func (s *shippoReconciler) track(ctx context.Context, e OpenEntity) (Delivery, bool, error) {
	var written struct {
		Data shippoTrack `json:"data"`
	}
	if err := json.Unmarshal(e.Payload, &written); err != nil || written.Data.Carrier == "" || written.Data.TrackingNumber == "" {
		return Delivery{}, false, fmt.Errorf("shippo reconcile: tracking number %s: %w: its event has no data.carrier and data.tracking_number", e.ID, ErrRefused)
	}
	path := "/tracks/" + url.PathEscape(written.Data.Carrier) + "/" + url.PathEscape(written.Data.TrackingNumber)
	body, err := s.api.get(ctx, path)
	if err != nil {
		return Delivery{}, false, fmt.Errorf("shippo reconcile: GET %s: %w", path, err)
	}
	var t shippoTrack
	if err := json.Unmarshal(body, &t); err != nil || t.Carrier == "" || t.TrackingNumber == "" {
		return Delivery{}, false, fmt.Errorf("shippo reconcile: GET %s: %w: not a track", path, ErrRefused)
	}
	if t.TrackingStatus == nil || t.TrackingStatus.Status == "" || t.TrackingStatus.StatusDate == "" {
		return Delivery{}, false, nil
	}
	// The key and the entity's version read status_date as given;
	// Created only reports it, zero when it is not RFC 3339.
	created, _ := time.Parse(time.RFC3339, t.TrackingStatus.StatusDate)
	wh, err := json.Marshal(struct {
		Event string          `json:"event"`
		Test  bool            `json:"test"`
		Data  json.RawMessage `json:"data"`
	}{"track_updated", false, body})
	if err != nil {
		return Delivery{}, false, fmt.Errorf("shippo reconcile: GET %s: %w: %v", path, ErrRefused, err)
	}
	return Delivery{ID: t.Carrier + "/" + t.TrackingNumber, Type: "track_updated", Created: created.UTC(), Body: wh, State: true}, true, nil
}
