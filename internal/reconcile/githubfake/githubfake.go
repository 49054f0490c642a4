// Package githubfake is a local GitHub REST API for tests: one hook's
// deliveries as GitHub's API reference describes them. GET
// /{hook}/deliveries lists them newest first (per_page up to 100, default
// 30; cursor paging by the Link header's rel="next"; items with id, guid,
// delivered_at, redelivery, duration, status, status_code, event,
// action). POST /{hook}/deliveries/{id}/attempts answers 202 and, as
// GitHub does, sends the delivery again to the hook's URL: the same body
// and GUID, signed with the hook's secret (X-Hub-Signature-256), recorded
// as a new delivery with redelivery true. Errors are {"message"}.
package githubfake

import (
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

// Delivery is one event the hook sent, or tried to.
type Delivery struct {
	GUID, Event, Action string
	// At is when it was delivered; zero is when it is added.
	At time.Time
	// Body is the payload.
	Body []byte
}

// record is one delivery as GitHub lists it.
type record struct {
	id         int64
	d          Delivery
	redelivery bool
	statusCode int
	status     string
}

// API is the fake API; see New.
type API struct {
	token, hook, secret string
	log                 *fakeapi.Log[string] // "METHOD path?query"

	mu         sync.Mutex
	target     string
	records    []record // newest first
	nextID     int64
	redelivers sync.WaitGroup
}

// errs are GitHub's errors: a message and where the documentation is.
var errs = fakeapi.Errors{
	Body: func(_ int, msg string) any {
		return map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"}
	},
	Limited:    "You have exceeded a secondary rate limit.",
	RetryAfter: "1",
}

// New returns the API of hook (repos/OWNER/REPO/hooks/ID), which accepts
// token and signs what it sends with secret.
func New(token, hook, secret string) *API {
	return &API{token: token, hook: hook, secret: secret, log: fakeapi.NewLog[string](errs), nextID: 1000}
}

// Target sets the hook's URL, where Deliver and redeliveries send.
func (a *API) Target(url string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.target = url
}

// Deliver sends d to the hook's URL as GitHub does and records the
// delivery with the answer's status; it returns the status.
func (a *API) Deliver(d Delivery) (int, error) {
	code, err := a.send(d)
	a.add(d, false, code)
	return code, err
}

// Add records a delivery that never reached the hook's URL (GitHub lists
// it with status_code 0), without sending anything.
func (a *API) Add(ds ...Delivery) {
	for _, d := range ds {
		a.add(d, false, 0)
	}
}

func (a *API) add(d Delivery, redelivery bool, code int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if d.At.IsZero() {
		d.At = time.Now()
	}
	a.nextID++
	r := record{id: a.nextID, d: d, redelivery: redelivery, statusCode: code, status: "OK"}
	if code/100 != 2 {
		r.status = "failed to connect to host"
		if code != 0 {
			r.status = "Invalid HTTP Response: " + strconv.Itoa(code)
		}
	}
	a.records = append(a.records, r)
	slices.SortStableFunc(a.records, func(x, y record) int {
		if c := y.d.At.Compare(x.d.At); c != 0 {
			return c
		}
		return int(y.id - x.id)
	})
}

// send posts d to the target, signed.
func (a *API) send(d Delivery) (int, error) {
	a.mu.Lock()
	target := a.target
	a.mu.Unlock()
	s, err := verify.NewGitHub(a.secret)
	if err != nil {
		return 0, err
	}
	return fakeapi.Send(target, s, map[string]string{
		"Content-Type":      "application/json",
		"User-Agent":        "GitHub-Hookshot/fake",
		"X-GitHub-Delivery": d.GUID,
		"X-GitHub-Event":    d.Event,
		"X-GitHub-Hook-ID":  a.hook[strings.LastIndex(a.hook, "/")+1:],
	}, d.Body)
}

// RateLimit makes the n-th request (from 1) be answered 429 with
// Retry-After: 1.
func (a *API) RateLimit(n int) { a.log.RateLimit(n) }

// Requests returns every request so far, "METHOD path?query", in order.
func (a *API) Requests() []string { return a.log.Requests() }

// Redelivered returns the GUIDs of the redeliveries made, in order.
func (a *API) Redelivered() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, r := range slices.Backward(a.records) {
		if r.redelivery {
			out = append(out, r.d.GUID)
		}
	}
	return out
}

// Wait waits for the redeliveries asked for so far to be sent.
func (a *API) Wait() { a.redelivers.Wait() }

// ServeHTTP answers the hook's deliveries endpoints.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.log.Arrive(w, r, r.Method+" "+r.URL.RequestURI()) {
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+a.token {
		errs.Write(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	base := "/" + a.hook + "/deliveries"
	switch rest, ok := strings.CutPrefix(r.URL.Path, base); {
	case ok && rest == "" && r.Method == http.MethodGet:
		a.list(w, r)
	case ok && strings.HasSuffix(rest, "/attempts") && r.Method == http.MethodPost:
		a.redeliver(w, strings.TrimSuffix(strings.TrimPrefix(rest, "/"), "/attempts"))
	default:
		errs.Write(w, http.StatusNotFound, "Not Found")
	}
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	per, ok := fakeapi.PageSize(q, "per_page", 30, 100)
	if !ok {
		errs.Write(w, http.StatusUnprocessableEntity, "per_page must be between 1 and 100")
		return
	}
	a.mu.Lock()
	records := slices.Clone(a.records)
	a.mu.Unlock()
	if c := q.Get("cursor"); c != "" {
		id, err := strconv.ParseInt(strings.TrimPrefix(c, "v1_"), 10, 64)
		i := slices.IndexFunc(records, func(r record) bool { return r.id == id })
		if err != nil || i < 0 {
			errs.Write(w, http.StatusUnprocessableEntity, "Invalid cursor")
			return
		}
		records = records[i+1:]
	}
	if len(records) > per {
		records = records[:per]
		next := url.Values{"per_page": {strconv.Itoa(per)}, "cursor": {"v1_" + strconv.FormatInt(records[per-1].id, 10)}}
		w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?%s>; rel="next"`, r.Host, r.URL.Path, next.Encode()))
	}
	items := make([]map[string]any, len(records))
	for i, rec := range records {
		items[i] = map[string]any{"id": rec.id, "guid": rec.d.GUID, "delivered_at": rec.d.At.UTC().Format(time.RFC3339),
			"redelivery": rec.redelivery, "duration": 0.31, "status": rec.status, "status_code": rec.statusCode,
			"event": rec.d.Event, "action": rec.d.Action, "installation_id": nil, "repository_id": 812345678}
	}
	fakeapi.JSON(w, http.StatusOK, items)
}

func (a *API) redeliver(w http.ResponseWriter, id string) {
	n, err := strconv.ParseInt(id, 10, 64)
	a.mu.Lock()
	i := slices.IndexFunc(a.records, func(r record) bool { return r.id == n })
	var d Delivery
	if i >= 0 {
		d = a.records[i].d
		a.redelivers.Add(1)
	}
	a.mu.Unlock()
	if err != nil || i < 0 {
		errs.Write(w, http.StatusNotFound, "Not Found")
		return
	}
	// GitHub answers at once and delivers later.
	go func() {
		defer a.redelivers.Done()
		d.At = time.Time{}
		code, _ := a.send(d)
		a.add(d, true, code)
	}()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	w.Write([]byte("{}"))
}
