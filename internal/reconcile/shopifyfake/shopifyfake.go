// Package shopifyfake is a local Shopify Admin REST API for tests: GET
// /admin/api/{version}/{resource}.json as Shopify's reference describes it
// (X-Shopify-Access-Token; updated_at_min; limit up to 250, default 50;
// cursor paging by page_info in the Link header's rel="next", a page_info
// request taking no other filter; {"<resource>": [...]}; errors as
// {"errors"}), over objects a test adds. Orders without status=any list
// the open ones only. A test can have a request answered 429 with
// Retry-After: 2.0, as Shopify's leaky bucket does, and send an object as
// its update webhook, signed.
package shopifyfake

import (
	"encoding/base64"
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

// Object is one object of a resource.
type Object struct {
	ID        int64
	UpdatedAt time.Time
	// Closed orders are listed only with status=any.
	Closed bool
}

// Body is the object as Shopify renders it.
func (o Object) Body() []byte {
	return fmt.Appendf(nil, `{"id":%d,"updated_at":%q,"note":"state %d","closed_at":%s}`,
		o.ID, o.UpdatedAt.Format(time.RFC3339), o.UpdatedAt.Unix(), map[bool]string{true: `"2026-01-01T00:00:00Z"`, false: "null"}[o.Closed])
}

// API is the fake API; see New.
type API struct {
	token string
	log   *fakeapi.Log[string] // "path?query"

	mu      sync.Mutex
	objects map[string][]Object
}

// errs are Shopify's errors; a 429 is its leaky bucket's.
var errs = fakeapi.Errors{
	Body:       func(_ int, msg string) any { return map[string]string{"errors": msg} },
	Limited:    "Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service.",
	RetryAfter: "2.0",
}

// New returns an API that accepts the access token token.
func New(token string) *API {
	return &API{token: token, log: fakeapi.NewLog[string](errs), objects: map[string][]Object{}}
}

// Add adds objects of resource.
func (a *API) Add(resource string, objs ...Object) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.objects[resource] = append(a.objects[resource], objs...)
	slices.SortFunc(a.objects[resource], func(x, y Object) int { return int(x.ID - y.ID) })
}

// RateLimit makes the n-th request (from 1) be answered 429 with
// Retry-After: 2.0.
func (a *API) RateLimit(n int) { a.log.RateLimit(n) }

// Requests returns every request so far, "path?query", in order.
func (a *API) Requests() []string { return a.log.Requests() }

// Send posts o to url as the webhook of topic from shop, signed with
// secret, with a fresh webhook id, triggered at after; it returns the
// status.
func Send(url, secret, shop, topic string, o Object, after time.Duration) (int, error) {
	s, err := verify.NewShopify(secret)
	if err != nil {
		return 0, err
	}
	return fakeapi.Send(url, s, map[string]string{
		"Content-Type":           "application/json",
		"X-Shopify-Topic":        topic,
		"X-Shopify-Shop-Domain":  shop,
		"X-Shopify-Webhook-Id":   fmt.Sprintf("b54557e4-bdd9-4b37-8a5f-%012d", o.ID*1000+o.UpdatedAt.Unix()%1000),
		"X-Shopify-Triggered-At": o.UpdatedAt.Add(after).UTC().Format(time.RFC3339Nano),
	}, o.Body())
}

// cursor is what a page_info stands for: the filter of the first request
// and where the next page starts.
type cursor struct {
	Min    string `json:"min"`
	Status string `json:"status"`
	After  int64  `json:"after"`
}

// ServeHTTP answers GET /admin/api/{version}/{resource}.json.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.log.Arrive(w, r, r.URL.RequestURI()) {
		return
	}
	if r.Header.Get("X-Shopify-Access-Token") != a.token {
		errs.Write(w, http.StatusUnauthorized, "[API] Invalid API key or access token (unrecognized login or wrong password)")
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if r.Method != http.MethodGet || len(parts) != 4 || parts[0] != "admin" || parts[1] != "api" || !strings.HasSuffix(parts[3], ".json") {
		errs.Write(w, http.StatusNotFound, "Not Found")
		return
	}
	res := strings.TrimSuffix(parts[3], ".json")
	q := r.URL.Query()
	limit, ok := fakeapi.PageSize(q, "limit", 50, 250)
	if !ok {
		errs.Write(w, http.StatusBadRequest, "limit must be between 1 and 250")
		return
	}
	c := cursor{Min: q.Get("updated_at_min"), Status: q.Get("status")}
	if pi := q.Get("page_info"); pi != "" {
		for k := range q {
			if k != "page_info" && k != "limit" {
				errs.Write(w, http.StatusBadRequest, "page_info takes no parameter but limit: "+k)
				return
			}
		}
		raw, err := base64.RawURLEncoding.DecodeString(pi)
		if err != nil || json.Unmarshal(raw, &c) != nil {
			errs.Write(w, http.StatusBadRequest, "Invalid page_info")
			return
		}
	}
	var since time.Time
	if c.Min != "" {
		var err error
		if since, err = time.Parse(time.RFC3339, c.Min); err != nil {
			errs.Write(w, http.StatusBadRequest, "updated_at_min: invalid")
			return
		}
	}
	a.mu.Lock()
	var listed []Object
	for _, o := range a.objects[res] {
		if o.ID > c.After && !o.UpdatedAt.Before(since) && (res != "orders" || c.Status == "any" || !o.Closed) {
			listed = append(listed, o)
		}
	}
	a.mu.Unlock()
	if len(listed) > limit {
		listed = listed[:limit]
		next := c
		next.After = listed[limit-1].ID
		raw, _ := json.Marshal(next)
		v := url.Values{"limit": {strconv.Itoa(limit)}, "page_info": {base64.RawURLEncoding.EncodeToString(raw)}}
		w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?%s>; rel="next"`, r.Host, r.URL.Path, v.Encode()))
	}
	data := make([]json.RawMessage, len(listed))
	for i, o := range listed {
		data[i] = o.Body()
	}
	fakeapi.JSON(w, http.StatusOK, map[string]any{res: data})
}
