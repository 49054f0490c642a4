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
	"bytes"
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

	mu       sync.Mutex
	objects  map[string][]Object
	requests []string
	limited  map[int]bool
}

// New returns an API that accepts the access token token.
func New(token string) *API {
	return &API{token: token, objects: map[string][]Object{}, limited: map[int]bool{}}
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
func (a *API) RateLimit(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.limited[n] = true
}

// Requests returns every request so far, "path?query", in order.
func (a *API) Requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.requests)
}

// Send posts o to url as the webhook of topic from shop, signed with
// secret, with a fresh webhook id, triggered at after; it returns the
// status.
func Send(url, secret, shop, topic string, o Object, after time.Duration) (int, error) {
	body := o.Body()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Shopify-Topic", topic)
	req.Header.Set("X-Shopify-Shop-Domain", shop)
	req.Header.Set("X-Shopify-Webhook-Id", fmt.Sprintf("b54557e4-bdd9-4b37-8a5f-%012d", o.ID*1000+o.UpdatedAt.Unix()%1000))
	req.Header.Set("X-Shopify-Triggered-At", o.UpdatedAt.Add(after).UTC().Format(time.RFC3339Nano))
	s, err := verify.NewShopify(secret)
	if err != nil {
		return 0, err
	}
	if err := s.Sign(req, body); err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"errors": msg})
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
	a.mu.Lock()
	a.requests = append(a.requests, r.URL.RequestURI())
	limited := a.limited[len(a.requests)]
	a.mu.Unlock()
	if limited {
		w.Header().Set("Retry-After", "2.0")
		apiError(w, http.StatusTooManyRequests, "Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service.")
		return
	}
	if r.Header.Get("X-Shopify-Access-Token") != a.token {
		apiError(w, http.StatusUnauthorized, "[API] Invalid API key or access token (unrecognized login or wrong password)")
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if r.Method != http.MethodGet || len(parts) != 4 || parts[0] != "admin" || parts[1] != "api" || !strings.HasSuffix(parts[3], ".json") {
		apiError(w, http.StatusNotFound, "Not Found")
		return
	}
	res := strings.TrimSuffix(parts[3], ".json")
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 250 {
			apiError(w, http.StatusBadRequest, "limit must be between 1 and 250")
			return
		}
		limit = n
	}
	c := cursor{Min: q.Get("updated_at_min"), Status: q.Get("status")}
	if pi := q.Get("page_info"); pi != "" {
		for k := range q {
			if k != "page_info" && k != "limit" {
				apiError(w, http.StatusBadRequest, "page_info takes no parameter but limit: "+k)
				return
			}
		}
		raw, err := base64.RawURLEncoding.DecodeString(pi)
		if err != nil || json.Unmarshal(raw, &c) != nil {
			apiError(w, http.StatusBadRequest, "Invalid page_info")
			return
		}
	}
	var since time.Time
	if c.Min != "" {
		var err error
		if since, err = time.Parse(time.RFC3339, c.Min); err != nil {
			apiError(w, http.StatusBadRequest, "updated_at_min: invalid")
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
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{res: data})
}
