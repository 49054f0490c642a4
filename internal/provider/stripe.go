package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// Stripe signs with Stripe-Signature (t=, v1=) over the timestamp and the
// body; its event id is in the body, since the delivery header changes on
// each retry.
const Stripe = "stripe"

func init() {
	register(&Provider{
		Name: Stripe,
		rank: 20,
		NewScheme: func(_ Credentials, secret string, opts ...verify.Option) (verify.Scheme, error) {
			return verify.NewStripe(secret, opts...)
		},
		Preset: Preset{
			Body:  BodyJSON,
			Key:   []Selector{Field("json:id")},
			Scope: [2]Selector{Field("json:data.object.object"), Field("json:type")},
			Entity: EntitySelectors{
				Type:    Field("json:data.object.object"),
				ID:      Field("json:data.object.id"),
				Version: Field("json:created"),
				State:   Selector{Derived: stripeState},
			},
		},
		Notes: Notes{Signed: "the body and the t= timestamp", Key: "json:id", Tenant: "none"},
		SenderHeaders: func(h http.Header, _ string, _ []byte) error {
			h.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
			h.Set("Content-Type", "application/json; charset=utf-8")
			return nil
		},
		Reconcile:           newStripeReconciler,
		ReconcileCredential: "api_key",
		ReconcileFields:     []string{FieldTypes},
		Examples: []Example{
			{"payment_intent.succeeded", "payment_intent.succeeded.json", "a PaymentIntent was paid"},
			{"charge.succeeded", "charge.succeeded.json", "a card charge succeeded"},
			{"charge.refunded", "charge.refunded.json", "a charge was refunded in full (entity state refunded)"},
			{"customer.created", "customer.created.json", "a customer was created"},
			{"checkout.session.completed", "checkout.session.completed.json", "a Checkout session was paid"},
		},
	})
}

// stripeState is "refunded" for a refunded object, else its status: a
// refunded charge keeps status "succeeded", so status alone would not change
// on a refund.
var stripeState = &Derived{
	Desc:  "json:data.object.refunded, else json:data.object.status",
	Reads: []string{"json:data.object.refunded", "json:data.object.status"},
	Value: func(e Event) (string, error) {
		if v, err := e.Read("json:data.object.refunded"); err == nil && v == "true" {
			return "refunded", nil
		}
		return e.Read("json:data.object.status")
	},
}

// Stripe's event listing, as its API reference describes GET /v1/events.
const (
	// StripeAPIURL is the Stripe API's base URL.
	StripeAPIURL = "https://api.stripe.com"
	// StripeRetention is how far back Stripe lists events.
	StripeRetention = 30 * 24 * time.Hour
	// stripePageSize is the largest page Stripe lists.
	stripePageSize = 100
	// stripeMaxTypes is the most types[] one listing may name.
	stripeMaxTypes = 20
)

// stripeReconciler lists a Stripe account's events with GET /v1/events: an
// event listed is the Event object its webhook carried, keyed by its evt_
// id as on the webhook path. Stripe renders a listed event in the API
// version of its creation, not in the webhook endpoint's.
type stripeReconciler struct {
	api *apiClient
}

// newStripeReconciler builds the Stripe reconciler. Its key must be a
// restricted key (rk_), which can be limited to reading events; a secret
// key can do anything on the account.
func newStripeReconciler(c ReconcileConfig) (Reconciler, error) {
	switch {
	case c.Key == "":
		return nil, errors.New("stripe reconcile: no API key: want a restricted key (rk_…) with read access to Events")
	case !strings.HasPrefix(c.Key, "rk_"):
		return nil, errors.New("stripe reconcile: the API key is not a restricted key: create one (rk_…) with read access to Events only (the key is not shown)")
	}
	api, err := newAPIClient(c, StripeAPIURL, http.Header{"Authorization": {"Bearer " + c.Key}})
	if err != nil {
		return nil, fmt.Errorf("stripe reconcile: %w", err)
	}
	api.refused = map[int]string{
		http.StatusUnauthorized: "the API key was refused",
		http.StatusForbidden:    "the API key may not list events (give the restricted key read access to Events)",
	}
	return &stripeReconciler{api: api}, nil
}

// stripeList is a page of GET /v1/events.
type stripeList struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
}

// stripeEvent is what the listing reads of one event.
type stripeEvent struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Created int64  `json:"created"`
}

func (s *stripeReconciler) List(ctx context.Context, q ListQuery, page func(Page) error) error {
	since := s.api.since(q.Since, StripeRetention)
	v := url.Values{}
	v.Set("created[gte]", strconv.FormatInt(since.Unix(), 10))
	v.Set("limit", strconv.Itoa(stripePageSize))
	// types[] names exact types, at most 20; patterns, or more types,
	// are matched here instead.
	exact := len(q.Types) > 0 && len(q.Types) <= stripeMaxTypes &&
		!slices.ContainsFunc(q.Types, func(t string) bool { return strings.ContainsAny(t, `*?[\`) })
	if exact {
		for _, t := range q.Types {
			v.Add("types[]", t)
		}
	}
	after := q.After
	for {
		if after != "" {
			v.Set("starting_after", after)
		}
		body, err := s.api.get(ctx, "/v1/events?"+v.Encode())
		if err != nil {
			return fmt.Errorf("stripe reconcile: GET /v1/events: %w", err)
		}
		var list stripeList
		if err := json.Unmarshal(body, &list); err != nil || list.Object != "list" {
			return fmt.Errorf("stripe reconcile: GET /v1/events: %w: not a list of events", ErrRefused)
		}
		var p Page
		for _, raw := range list.Data {
			var e stripeEvent
			if err := json.Unmarshal(raw, &e); err != nil || e.ID == "" {
				return fmt.Errorf("stripe reconcile: GET /v1/events: %w: an event without an id", ErrRefused)
			}
			after = e.ID
			if !matchType(q.Types, e.Type) {
				continue
			}
			p.Deliveries = append(p.Deliveries, Delivery{ID: e.ID, Type: e.Type,
				Created: time.Unix(e.Created, 0).UTC(), Body: raw, Header: http.Header{}})
		}
		if list.HasMore && len(list.Data) == 0 {
			return fmt.Errorf("stripe reconcile: GET /v1/events: %w: an empty page with more to come", ErrRefused)
		}
		if list.HasMore {
			p.Next = after
		}
		if err := page(p); err != nil {
			return err
		}
		if !list.HasMore {
			return nil
		}
	}
}

// matchType reports whether typ matches one of patterns, or patterns is
// empty.
func matchType(patterns []string, typ string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, typ); ok {
			return true
		}
	}
	return false
}
