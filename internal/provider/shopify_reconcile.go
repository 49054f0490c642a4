package provider

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Shopify's Admin REST API, as its reference describes the listings of
// resources by updated_at_min.
const (
	// shopifyPageSize is the largest page Shopify lists.
	shopifyPageSize = 250
)

// shopifyResource is a resource a Shopify source can reconcile: the topic
// of the webhook sent when one of its objects is updated, and what its
// listing needs besides updated_at_min.
type shopifyResource struct {
	topic string
	query url.Values
}

// shopifyResources are the resources whose listing takes updated_at_min.
var shopifyResources = map[string]shopifyResource{
	// Without status=any, only open orders are listed.
	"orders":             {topic: "orders/updated", query: url.Values{"status": {"any"}}},
	"products":           {topic: "products/update"},
	"customers":          {topic: "customers/update"},
	"custom_collections": {topic: "collections/update"},
	"smart_collections":  {topic: "collections/update"},
}

var (
	shopifyShop    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*\.myshopify\.com$`)
	shopifyVersion = regexp.MustCompile(`^(\d{4}-(01|04|07|10)|unstable)$`)
)

// checkShopifyReconcile checks the shop, resources and API version of a
// source's reconcile block.
func checkShopifyReconcile(c ReconcileConfig) []Problem {
	var out []Problem
	switch {
	case c.Shop == "":
		out = append(out, Problem{FieldShop, "required for provider shopify: NAME.myshopify.com"})
	case !shopifyShop.MatchString(c.Shop):
		out = append(out, Problem{FieldShop, fmt.Sprintf("%q: want the shop's NAME.myshopify.com domain (not its own domain, not a URL)", c.Shop)})
	}
	known := make([]string, 0, len(shopifyResources))
	for name := range shopifyResources {
		known = append(known, name)
	}
	slices.Sort(known)
	if len(c.Resources) == 0 {
		out = append(out, Problem{FieldResources, "required for provider shopify: the resources the webhooks subscribe to, of " + strings.Join(known, ", ")})
	}
	for i, r := range c.Resources {
		switch {
		case shopifyResources[r].topic == "":
			out = append(out, Problem{fmt.Sprintf("%s[%d]", FieldResources, i), fmt.Sprintf("%q: want one of %s", r, strings.Join(known, ", "))})
		case slices.Index(c.Resources, r) < i:
			out = append(out, Problem{fmt.Sprintf("%s[%d]", FieldResources, i), fmt.Sprintf("%q is listed twice", r)})
		}
	}
	if c.APIVersion != "" && !shopifyVersion.MatchString(c.APIVersion) {
		out = append(out, Problem{FieldAPIVersion, fmt.Sprintf("%q: want a Shopify API version such as %s", c.APIVersion, shopifyAPIVersion)})
	}
	return out
}

// shopifyReconciler lists the objects of a shop's resources updated since
// the checkpoint. Each object is offered as the state its update webhook
// ({resource}/update, orders/updated) would have carried: the object as
// the body, versioned by its updated_at, under a webhook id made from the
// resource, the object's id and its updated_at, so that listing one state
// again gives the same key.
type shopifyReconciler struct {
	api       *apiClient
	shop      string
	version   string
	resources []string
}

// newShopifyReconciler builds the Shopify reconciler, with an Admin API
// access token that may read the resources.
func newShopifyReconciler(c ReconcileConfig) (Reconciler, error) {
	if c.Key == "" {
		return nil, errors.New("shopify reconcile: no token: want the app's Admin API access token for the shop")
	}
	if pr := checkShopifyReconcile(c); len(pr) > 0 {
		return nil, fmt.Errorf("shopify reconcile: %s: %s", pr[0].Field, pr[0].Message)
	}
	api, err := newAPIClient(c, "https://"+c.Shop, http.Header{"X-Shopify-Access-Token": {c.Key}})
	if err != nil {
		return nil, fmt.Errorf("shopify reconcile: %w", err)
	}
	api.message = shopifyMessage
	api.refused = map[int]string{
		http.StatusUnauthorized: "the access token was refused",
		http.StatusForbidden:    "the access token lacks a read scope of the resources (read_orders, read_products, read_customers)",
		http.StatusNotFound:     "no such shop, resource or API version",
	}
	version := c.APIVersion
	if version == "" {
		version = shopifyAPIVersion
	}
	return &shopifyReconciler{api: api, shop: c.Shop, version: version, resources: slices.Clone(c.Resources)}, nil
}

// shopifyMessage is the message of a Shopify error body {"errors"}, a
// string or an object, or the body's start.
func shopifyMessage(body []byte) string {
	var e struct {
		Errors json.RawMessage `json:"errors"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Errors) > 0 {
		var s string
		if json.Unmarshal(e.Errors, &s) == nil {
			return s
		}
		return string(e.Errors)
	}
	return jsonMessage(body)
}

// shopifyObject is what the listing reads of one object.
type shopifyObject struct {
	ID        json.Number `json:"id"`
	UpdatedAt string      `json:"updated_at"`
}

// List lists each resource in turn with updated_at_min and limit=250,
// then by the page_info of the Link header's next page. A page's Next is
// the resource and the page_info that resumes after it.
func (s *shopifyReconciler) List(ctx context.Context, q ListQuery, page func(Page) error) error {
	at := 0
	cursor := ""
	if q.After != "" {
		res, info, _ := strings.Cut(q.After, " ")
		if at = slices.Index(s.resources, res); at < 0 {
			// The resources changed since the run was interrupted:
			// list them all again.
			at = 0
		} else {
			cursor = info
		}
	}
	for ; at < len(s.resources); at++ {
		res := s.resources[at]
		for {
			v := url.Values{"limit": {strconv.Itoa(shopifyPageSize)}}
			if cursor == "" {
				v.Set("updated_at_min", q.Since.UTC().Format(time.RFC3339))
				for k, vs := range shopifyResources[res].query {
					v[k] = vs
				}
			} else {
				// A page_info request takes no filter but limit.
				v.Set("page_info", cursor)
			}
			path := "/admin/api/" + s.version + "/" + res + ".json"
			ans, err := s.api.do(ctx, http.MethodGet, path+"?"+v.Encode())
			if err != nil {
				return fmt.Errorf("shopify reconcile: GET %s: %w", path, err)
			}
			var list map[string][]json.RawMessage
			if err := json.Unmarshal(ans.Body, &list); err != nil || list[res] == nil {
				return fmt.Errorf("shopify reconcile: GET %s: %w: not a list of %s", path, ErrRefused, res)
			}
			var p Page
			for _, raw := range list[res] {
				d, err := s.delivery(res, raw)
				if err != nil {
					return fmt.Errorf("shopify reconcile: GET %s: %w", path, err)
				}
				p.Deliveries = append(p.Deliveries, d)
			}
			cursor = pageInfo(ans.Header.Get("Link"))
			switch {
			case cursor != "":
				p.Next = res + " " + cursor
			case at+1 < len(s.resources):
				p.Next = s.resources[at+1] + " "
			}
			if err := page(p); err != nil {
				return err
			}
			if cursor == "" {
				break
			}
		}
	}
	return nil
}

// delivery is the object raw of resource res as its update webhook
// would have carried it.
func (s *shopifyReconciler) delivery(res string, raw json.RawMessage) (Delivery, error) {
	var o shopifyObject
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&o); err != nil || o.ID == "" || o.UpdatedAt == "" {
		return Delivery{}, fmt.Errorf("%w: a %s object without an id or updated_at", ErrRefused, res)
	}
	updated, err := time.Parse(time.RFC3339, o.UpdatedAt)
	if err != nil {
		return Delivery{}, fmt.Errorf("%w: %s %s: updated_at %q", ErrRefused, res, o.ID, o.UpdatedAt)
	}
	topic := shopifyResources[res].topic
	h := http.Header{}
	h.Set("X-Shopify-Webhook-Id", stateID(res, o.ID.String(), o.UpdatedAt))
	h.Set("X-Shopify-Topic", topic)
	h.Set("X-Shopify-Shop-Domain", s.shop)
	h.Set("X-Shopify-Triggered-At", o.UpdatedAt)
	h.Set("X-Shopify-API-Version", s.version)
	return Delivery{ID: res + "/" + o.ID.String(), Type: topic, Created: updated.UTC(), Body: raw, Header: h, State: true}, nil
}

// stateID is the webhook id of the state of object id of resource res at
// updatedAt: a name-based (version 5 form) UUID of the three, the same
// each time the state is listed.
func stateID(res, id, updatedAt string) string {
	sum := sha256.Sum256([]byte(res + "\x00" + id + "\x00" + updatedAt))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// pageInfo is the page_info of the rel="next" link of a Link header; ""
// when there is none.
func pageInfo(link string) string {
	return nextLink(link).Get("page_info")
}
