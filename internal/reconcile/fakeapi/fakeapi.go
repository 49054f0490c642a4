// Package fakeapi is what the local provider APIs of the reconciliation
// tests (stripefake, githubfake, shopifyfake, shippofake) share: a log of
// the requests an API was sent, in which a test can have a request held
// until it releases it, or answered with an error as the provider's rate
// limit or an outage would answer it; JSON answers, errors in the
// provider's shape among them; and posting a webhook signed as the
// provider signs it.
package fakeapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"

	"github.com/hookgate/hookgate/verify"
)

// JSON answers status with v as JSON.
func JSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// PageSize reads the page size parameter name of q: def when q has none;
// ok is false unless it is a number from 1 to most.
func PageSize(q url.Values, name string, def, most int) (n int, ok bool) {
	v := q.Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 1 && n <= most
}

// Errors is how a provider's API answers an error.
type Errors struct {
	// Body is the JSON body of an error of status that says msg.
	Body func(status int, msg string) any
	// Limited is what a 429 says, and RetryAfter the Retry-After of the
	// 429s that [Log.RateLimit] plans.
	Limited, RetryAfter string
}

// Write answers status with the body of an error that says msg.
func (e Errors) Write(w http.ResponseWriter, status int, msg string) {
	JSON(w, status, e.Body(status, msg))
}

// Log records the requests a fake API is sent, as entries of the API's
// choosing, and holds or fails those a test names by number (from 1);
// see NewLog.
type Log[T any] struct {
	errs Errors

	mu       sync.Mutex
	requests []T
	failures map[int]failure
	holds    map[int]hold
}

// failure is a planned error answer: its status, and its Retry-After
// unless "".
type failure struct {
	status     int
	retryAfter string
}

// hold is a held request: arrived is closed when it comes, and it goes
// on once released is closed.
type hold struct {
	arrived, released chan struct{}
}

// NewLog returns a Log that answers the failures it plans as errs says.
func NewLog[T any](errs Errors) *Log[T] {
	return &Log[T]{errs: errs, failures: map[int]failure{}, holds: map[int]hold{}}
}

// Requests returns the entry of every request so far, in order.
func (l *Log[T]) Requests() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.requests)
}

// RateLimit makes the n-th request be answered 429 with the API's
// Retry-After.
func (l *Log[T]) RateLimit(n int) {
	l.Fail(n, http.StatusTooManyRequests, l.errs.RetryAfter)
}

// Fail makes the n-th request be answered status, with Retry-After
// retryAfter unless it is "".
func (l *Log[T]) Fail(n, status int, retryAfter string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures[n] = failure{status: status, retryAfter: retryAfter}
}

// Hold makes the n-th request wait until release is called; arrived is
// closed when it comes.
func (l *Log[T]) Hold(n int) (arrived <-chan struct{}, release func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := hold{arrived: make(chan struct{}), released: make(chan struct{})}
	l.holds[n] = h
	return h.arrived, sync.OnceFunc(func() { close(h.released) })
}

// Arrive records r as entry, waits while r is held, and answers r with
// the failure planned for it, if any. It reports whether the API is
// still to answer r: false once Arrive answered it, or once r's client
// left while it was held.
func (l *Log[T]) Arrive(w http.ResponseWriter, r *http.Request, entry T) bool {
	l.mu.Lock()
	l.requests = append(l.requests, entry)
	n := len(l.requests)
	h, held := l.holds[n]
	f, failed := l.failures[n]
	l.mu.Unlock()
	if held {
		close(h.arrived)
		select {
		case <-h.released:
		case <-r.Context().Done():
			return false
		}
	}
	if !failed {
		return true
	}
	if f.retryAfter != "" {
		w.Header().Set("Retry-After", f.retryAfter)
	}
	msg := http.StatusText(f.status)
	if f.status == http.StatusTooManyRequests {
		msg = l.errs.Limited
	}
	l.errs.Write(w, f.status, msg)
	return false
}

// Send posts body to url with the headers of header, signed by s as the
// provider signs its webhooks, and returns the answer's status.
func Send(url string, s verify.Signer, header map[string]string, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for name, v := range header {
		req.Header.Set(name, v)
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
