package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// GitHub's hook deliveries, as its REST API reference describes them
// (GET and POST /repos/{owner}/{repo}/hooks/{hook_id}/deliveries…, and the
// same under /orgs/{org}).
const (
	// GitHubAPIURL is the GitHub REST API's base URL.
	GitHubAPIURL = "https://api.github.com"
	// GitHubRetention is how far back GitHub lists a hook's deliveries.
	GitHubRetention = 3 * 24 * time.Hour
	// githubPageSize is the largest page GitHub lists.
	githubPageSize = 100
	// githubAPIVersion is the REST API version the requests name.
	githubAPIVersion = "2022-11-28"
)

// githubHook is the form of a hook whose deliveries a token can list.
var githubHook = regexp.MustCompile(`^(repos/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+|orgs/[A-Za-z0-9_.-]+)/hooks/[0-9]+$`)

// wantGitHubHook says what a hook is.
const wantGitHubHook = "want repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID (the ID is the last part of the hook's settings URL)"

// checkGitHubReconcile checks the hook of a source's reconcile block.
func checkGitHubReconcile(c ReconcileConfig) []Problem {
	switch {
	case c.Hook == "":
		return []Problem{{FieldHook, "required for provider github: " + wantGitHubHook}}
	case strings.Trim(c.Hook, "/") == "app/hook":
		return []Problem{{FieldHook, "app/hook: a GitHub App's hook is read with a JWT signed by the app's private key, " +
			"which reconcile does not make: reconcile the repository's or organization's hook instead"}}
	case !githubHook.MatchString(c.Hook):
		return []Problem{{FieldHook, fmt.Sprintf("%q: %s", c.Hook, wantGitHubHook)}}
	}
	return nil
}

// githubReconciler lists a hook's deliveries (GET {hook}/deliveries) and
// asks GitHub to redeliver those the inbox lacks (POST
// {hook}/deliveries/{id}/attempts): GitHub's listing carries no payload,
// and a redelivery is signed with the hook's secret and carries the
// delivery's GUID, so intake keys and stores it as the first delivery
// would have been.
type githubReconciler struct {
	api  *apiClient
	hook string
}

var _ Redeliverer = (*githubReconciler)(nil)

// newGitHubReconciler builds the GitHub reconciler, with a token that may
// read the hook's deliveries and redeliver them.
func newGitHubReconciler(c ReconcileConfig) (Reconciler, error) {
	if c.Key == "" {
		return nil, errors.New("github reconcile: no token: want one with Webhooks read and write on the hook's repository or organization")
	}
	if pr := checkGitHubReconcile(c); len(pr) > 0 {
		return nil, fmt.Errorf("github reconcile: %s: %s", pr[0].Field, pr[0].Message)
	}
	api, err := newAPIClient(c, GitHubAPIURL, http.Header{
		"Authorization":        {"Bearer " + c.Key},
		"Accept":               {"application/vnd.github+json"},
		"X-Github-Api-Version": {githubAPIVersion},
	})
	if err != nil {
		return nil, fmt.Errorf("github reconcile: %w", err)
	}
	api.message = githubMessage
	api.refused = map[int]string{
		http.StatusUnauthorized: "the token was refused",
		http.StatusForbidden:    "the token may not read or redeliver the hook's deliveries (it needs Webhooks: read and write)",
		http.StatusNotFound:     "no hook " + c.Hook + ", or the token cannot see it",
	}
	api.limited = githubLimited
	return &githubReconciler{api: api, hook: c.Hook}, nil
}

// githubMessage is the message of a GitHub error body {"message"}, or the
// body's start.
func githubMessage(body []byte) string { return fieldMessage(body, "message") }

// githubLimited reads GitHub's rate limits answered 403: the primary one
// (X-RateLimit-Remaining: 0, waiting until X-RateLimit-Reset) and the
// secondary one (Retry-After).
func githubLimited(status int, h http.Header, now time.Time) (time.Duration, bool) {
	if status != http.StatusForbidden {
		return 0, false
	}
	if ra := h.Get("Retry-After"); ra != "" {
		return retryAfter(ra, now), true
	}
	if h.Get("X-Ratelimit-Remaining") != "0" {
		return 0, false
	}
	reset, err := strconv.ParseInt(h.Get("X-Ratelimit-Reset"), 10, 64)
	if err != nil {
		return 0, true
	}
	return max(time.Unix(reset, 0).Sub(now), 0), true
}

// githubDelivery is what the listing reads of one delivery.
type githubDelivery struct {
	ID          int64  `json:"id"`
	GUID        string `json:"guid"`
	DeliveredAt string `json:"delivered_at"`
	Event       string `json:"event"`
	Action      string `json:"action"`
}

// List lists the hook's deliveries newest first, at most 100 a page, with
// the cursor of the Link header's next page, until one is older than
// q.Since (or than GitHub keeps). Each GUID is listed once, at its newest
// delivery: the others are redeliveries of the same event.
func (g *githubReconciler) List(ctx context.Context, q ListQuery, page func(Page) error) error {
	since := g.api.since(q.Since, GitHubRetention)
	seen := map[string]bool{}
	cursor := q.After
	for {
		v := url.Values{"per_page": {strconv.Itoa(githubPageSize)}}
		if cursor != "" {
			v.Set("cursor", cursor)
		}
		ans, err := g.api.do(ctx, http.MethodGet, "/"+g.hook+"/deliveries?"+v.Encode())
		if err != nil {
			return fmt.Errorf("github reconcile: GET /%s/deliveries: %w", g.hook, err)
		}
		var list []githubDelivery
		if err := json.Unmarshal(ans.Body, &list); err != nil {
			return fmt.Errorf("github reconcile: GET /%s/deliveries: %w: not a list of deliveries", g.hook, ErrRefused)
		}
		var p Page
		older := false
		for _, d := range list {
			at, err := time.Parse(time.RFC3339, d.DeliveredAt)
			if err != nil || d.ID == 0 || d.GUID == "" || d.Event == "" {
				return fmt.Errorf("github reconcile: GET /%s/deliveries: %w: a delivery without an id, guid, event or delivered_at", g.hook, ErrRefused)
			}
			if at.Before(since) {
				older = true
				break
			}
			if seen[d.GUID] || !matchType(q.Types, d.Event) {
				continue
			}
			seen[d.GUID] = true
			h := http.Header{}
			h.Set("X-GitHub-Delivery", d.GUID)
			h.Set("X-GitHub-Event", d.Event)
			p.Deliveries = append(p.Deliveries, Delivery{ID: strconv.FormatInt(d.ID, 10), Type: d.Event, Created: at.UTC(), Header: h})
		}
		if !older {
			p.Next = nextLink(ans.Header.Get("Link")).Get("cursor")
		}
		if err := page(p); err != nil {
			return err
		}
		if p.Next == "" {
			return nil
		}
		cursor = p.Next
	}
}

// Redeliver asks GitHub to send the delivery again.
func (g *githubReconciler) Redeliver(ctx context.Context, d Delivery) error {
	if _, err := g.api.do(ctx, http.MethodPost, "/"+g.hook+"/deliveries/"+url.PathEscape(d.ID)+"/attempts"); err != nil {
		return fmt.Errorf("github reconcile: redeliver %s (%s): %w", d.ID, d.Header.Get("X-GitHub-Delivery"), err)
	}
	return nil
}
