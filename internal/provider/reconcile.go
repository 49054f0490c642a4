package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/wait"
)

// Reconciler lists what a provider says it sent, each event as the
// delivery the webhook path would have received, so that it is keyed
// exactly as that delivery was (or would have been): offered to the inbox,
// a listed event whose webhook came is a duplicate, and one whose webhook
// never came is new.
type Reconciler interface {
	// List lists the events the provider created at or after q.Since,
	// calling page with each page in the order the provider lists them
	// (Stripe's: newest first, so a run's new checkpoint is the time it
	// started, kept once its last page is stored). It stops at the first
	// error, page's included, and returns it; a caller that stored a page
	// may keep its Next to resume an interrupted run from.
	List(ctx context.Context, q ListQuery, page func(Page) error) error
}

// Redeliverer is a Reconciler whose provider re-sends a listed delivery
// itself, signed, through the webhook path: its listing carries each
// delivery's keys (the headers the preset reads) but not its event. The
// runner asks it to redeliver the deliveries whose key the inbox does not
// hold, instead of accepting them, and the webhook that comes is keyed
// and stored by intake as any other.
type Redeliverer interface {
	Reconciler
	// Redeliver asks the provider to send d again. An error wrapping
	// ErrRefused concerns d alone; any other stops the run.
	Redeliver(ctx context.Context, d Delivery) error
}

// ListQuery is what a reconciler lists.
type ListQuery struct {
	// Since is the oldest creation time listed: the checkpoint minus an
	// overlap. One older than the provider keeps events is moved up to
	// the oldest it keeps.
	Since time.Time
	// Types are the event types listed, as patterns in the syntax of
	// Go's path.Match ("charge.*"); none lists every type.
	Types []string
	// After resumes a listing after the page whose Next it is; "" starts
	// at the beginning.
	After string
	// Open pages the source's entities whose state is none of the
	// provider's FinalStates, for a reconciler that asks the provider
	// about each (Shippo's): at most limit, after the entity after, in
	// one fixed order. The runner sets it for a provider with
	// FinalStates.
	Open func(ctx context.Context, after EntityRef, limit int) ([]OpenEntity, error)
}

// EntityRef names an entity the inbox holds; the zero one comes before
// every other.
type EntityRef struct {
	Tenant, Type, ID string
}

// OpenEntity is an entity in a state that is not final.
type OpenEntity struct {
	EntityRef
	State string
	// Payload is the request body of the event that last wrote it.
	Payload []byte
}

// Page is one page of a listing.
type Page struct {
	// Deliveries are the page's events of the listed types.
	Deliveries []Delivery
	// Next resumes the listing after this page; "" on the last page.
	Next string
}

// Delivery is one listed event as its webhook would have carried it.
type Delivery struct {
	// ID is the provider's id of the event.
	ID string
	// Type is the provider's name for what happened.
	Type string
	// Created is when the provider created the event.
	Created time.Time
	// Body is the request body of the webhook.
	Body []byte
	// Header holds the webhook's headers that the provider's preset reads;
	// empty when it reads none.
	Header http.Header
	// State reports a delivery that is its entity's state now rather
	// than an event the provider sent (Shopify's objects): it is offered
	// only when newer than the state the inbox holds for the entity,
	// which a webhook may have brought under another key.
	State bool
	// Err, when set, says why the provider could not give this event
	// (Shippo refusing one tracking number): the run counts it failed
	// and goes on with the others. ID names what failed.
	Err error
}

// ReconcileConfig is what a reconciler needs to reach its provider's API.
type ReconcileConfig struct {
	// APIURL is the API's base URL; "" is the provider's own. Tests and
	// proxies set it.
	APIURL string
	// Key is the API credential, read from the source's secret reference.
	Key string
	// Client makes the requests; nil is http.DefaultClient.
	Client *http.Client
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends (then returning its error), between
	// the tries of a request; nil waits on a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// MaxAttempts is how many times one request is tried before the
	// listing fails; 0 is [DefaultMaxAttempts].
	MaxAttempts int

	// Hook is the GitHub webhook whose deliveries are listed:
	// repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID.
	Hook string
	// Shop is the Shopify shop, NAME.myshopify.com.
	Shop string
	// Resources are the Shopify resources listed (orders, products, …).
	Resources []string
	// APIVersion is the provider API's version; "" is the reconciler's
	// default.
	APIVersion string
}

// Fields of a source's reconcile block that only some providers read
// (Provider.ReconcileFields).
const (
	FieldTypes      = "types"
	FieldHook       = "hook"
	FieldShop       = "shop"
	FieldResources  = "resources"
	FieldAPIVersion = "api_version"
)

// Defaults of a reconciler's requests.
const (
	// DefaultMaxAttempts is how many times a reconciler tries one request
	// that is answered 429 or 5xx, or not answered.
	DefaultMaxAttempts = 8
	// RetryInitial is the wait before the second try of a request that
	// failed without a Retry-After; each later wait doubles it, up to
	// RetryMax.
	RetryInitial = time.Second
	// RetryMax caps the wait between two tries, a Retry-After's
	// included.
	RetryMax = 5 * time.Minute
	// maxAPIResponse bounds the body of one API answer.
	maxAPIResponse = 64 << 20
)

// Errors a reconciler's listing wraps.
var (
	// ErrRefused reports an answer that trying again will not change:
	// a credential refused or without the permission, a bad request.
	ErrRefused = errors.New("refused by the provider's API")
	// ErrUnavailable reports an API that kept answering 429 or 5xx, or
	// did not answer, for every try.
	ErrUnavailable = errors.New("provider's API unavailable")
)

// apiClient makes a reconciler's requests: with its credential, tried
// again after 429 (waiting what Retry-After says), 5xx and transport
// errors, with a doubling wait.
type apiClient struct {
	base string
	// header holds the credential's header and any other every request
	// carries.
	header      http.Header
	client      *http.Client
	now         func() time.Time
	sleep       func(ctx context.Context, d time.Duration) error
	maxAttempts int
	// message reads a refused answer's body for what it says;
	// jsonMessage unless set.
	message func(body []byte) string
	// refused names, by status, what a refusal means (the credential
	// refused, a permission missing); the message follows it.
	refused map[int]string
	// limited, when set, reads a rate limit the API reports with a status
	// other than 429 (GitHub's 403 with X-RateLimit-Remaining: 0): the
	// wait it asks for, and whether it is one.
	limited func(status int, h http.Header, now time.Time) (time.Duration, bool)
}

// apiAnswer is a 2xx answer of the API.
type apiAnswer struct {
	Body   []byte
	Header http.Header
}

// newAPIClient returns the client of the API at c.APIURL, or defaultURL
// when it is "", whose requests carry header.
func newAPIClient(c ReconcileConfig, defaultURL string, header http.Header) (*apiClient, error) {
	if c.APIURL != "" {
		if u, err := url.Parse(c.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("api_url %q: want an absolute http or https URL", c.APIURL)
		}
	}
	a := &apiClient{
		base:        strings.TrimRight(c.APIURL, "/"),
		header:      header,
		message:     jsonMessage,
		client:      c.Client,
		now:         c.Now,
		sleep:       c.Sleep,
		maxAttempts: c.MaxAttempts,
	}
	if a.base == "" {
		a.base = defaultURL
	}
	if a.client == nil {
		a.client = http.DefaultClient
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.sleep == nil {
		a.sleep = wait.Sleep
	}
	if a.maxAttempts <= 0 {
		a.maxAttempts = DefaultMaxAttempts
	}
	return a, nil
}

// since is the start of a listing asked from since of a provider that
// keeps events for kept: since, or the oldest time the provider keeps.
func (a *apiClient) since(since time.Time, kept time.Duration) time.Time {
	if oldest := a.now().Add(-kept); since.Before(oldest) {
		return oldest
	}
	return since
}

// get returns the body of a 2xx answer to GET base+pathQuery.
func (a *apiClient) get(ctx context.Context, pathQuery string) ([]byte, error) {
	ans, err := a.do(ctx, http.MethodGet, pathQuery)
	return ans.Body, err
}

// do returns the 2xx answer to method base+pathQuery, trying again as
// apiClient says.
func (a *apiClient) do(ctx context.Context, method, pathQuery string) (apiAnswer, error) {
	backoff := RetryInitial
	var last error
	for attempt := 1; ; attempt++ {
		wait, ans, err := a.try(ctx, method, pathQuery)
		if err == nil || errors.Is(err, ErrRefused) || ctx.Err() != nil {
			return ans, err
		}
		last = err
		if attempt >= a.maxAttempts {
			return apiAnswer{}, fmt.Errorf("%w: %d tries: %v", ErrUnavailable, attempt, last)
		}
		if wait <= 0 {
			wait = backoff
			backoff = min(2*backoff, RetryMax)
		}
		if err := a.sleep(ctx, min(wait, RetryMax)); err != nil {
			return apiAnswer{}, err
		}
	}
}

// try makes one request: a 2xx answer, an error wrapping ErrRefused for
// one not worth repeating, or another error with the wait the API asked
// for (0 when it did not say).
func (a *apiClient) try(ctx context.Context, method, pathQuery string) (time.Duration, apiAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+pathQuery, nil)
	if err != nil {
		return 0, apiAnswer{}, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	for name, v := range a.header {
		req.Header[name] = v
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	req.Header.Set("User-Agent", "hookgate-reconcile")
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, apiAnswer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIResponse+1))
	switch {
	case err != nil:
		return 0, apiAnswer{}, err
	case len(body) > maxAPIResponse:
		return 0, apiAnswer{}, fmt.Errorf("%w: an answer of more than %d bytes", ErrRefused, maxAPIResponse)
	case resp.StatusCode/100 == 2:
		return 0, apiAnswer{Body: body, Header: resp.Header}, nil
	case resp.StatusCode == http.StatusTooManyRequests:
		return retryAfter(resp.Header.Get("Retry-After"), a.now()), apiAnswer{}, fmt.Errorf("%s: rate limited", resp.Status)
	case resp.StatusCode/100 == 5:
		return retryAfter(resp.Header.Get("Retry-After"), a.now()), apiAnswer{}, fmt.Errorf("%s", resp.Status)
	}
	if a.limited != nil {
		if wait, ok := a.limited(resp.StatusCode, resp.Header, a.now()); ok {
			return wait, apiAnswer{}, fmt.Errorf("%s: rate limited", resp.Status)
		}
	}
	return 0, apiAnswer{}, &refusal{status: resp.StatusCode, msg: resp.Status + ": " + a.describe(resp.StatusCode, body)}
}

// describe is the message of a refused answer of status with body.
func (a *apiClient) describe(status int, body []byte) string {
	msg := a.message(body)
	if what, ok := a.refused[status]; ok {
		return what + ": " + msg
	}
	return msg
}

// refusal is an answer the API refused with; it wraps ErrRefused.
type refusal struct {
	status int
	msg    string
}

func (e *refusal) Error() string { return ErrRefused.Error() + ": " + e.msg }

func (e *refusal) Unwrap() error { return ErrRefused }

// credentialRefused reports whether err is the API refusing the
// credential (401) or its permission (403): no later request will do
// better.
func credentialRefused(err error) bool {
	var r *refusal
	return errors.As(err, &r) && (r.status == http.StatusUnauthorized || r.status == http.StatusForbidden)
}

// retryAfter reads a Retry-After header, seconds or an HTTP date, at most
// RetryMax; 0 when absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	// Seconds, whole or not (Shopify sends "2.0").
	if s, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && s >= 0 {
		return time.Duration(min(s, RetryMax.Seconds()) * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// jsonMessage is the message of a JSON error body {"error": {"message"}},
// or the body's start when it is not one.
func jsonMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := strings.Join(strings.Fields(string(body)), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// fieldMessage is the message of a JSON error body whose string field
// name holds it (GitHub's {"message"}, Shippo's {"detail"}), or
// jsonMessage's when it is not one.
func fieldMessage(body []byte, name string) string {
	var e map[string]json.RawMessage
	var msg string
	if json.Unmarshal(body, &e) == nil && json.Unmarshal(e[name], &msg) == nil && msg != "" {
		return msg
	}
	return jsonMessage(body)
}

// nextLink is the query of the rel="next" link of a Link header (RFC
// 8288), by which GitHub and Shopify page; empty when there is none.
func nextLink(link string) url.Values {
	for part := range strings.SplitSeq(link, ",") {
		target, params, ok := strings.Cut(part, ";")
		if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			continue
		}
		u, err := url.Parse(strings.Trim(strings.TrimSpace(target), "<>"))
		if err != nil {
			return url.Values{}
		}
		return u.Query()
	}
	return url.Values{}
}
