package reconcile

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/hookgate/hookgate/internal/wait"
)

// pacer spaces a reconciler's requests to its provider at least interval
// apart: the source's reconcile rate.
type pacer struct {
	interval time.Duration
	next     http.RoundTripper
	// sleep waits d or until ctx ends; nil waits on a timer.
	sleep func(ctx context.Context, d time.Duration) error

	mu sync.Mutex
	// due is when the next request may go.
	due time.Time
}

// RoundTrip waits for the request's turn, then makes it.
func (p *pacer) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := p.wait(r.Context()); err != nil {
		return nil, err
	}
	return p.next.RoundTrip(r)
}

// wait takes the next turn and waits for it, or for ctx to end.
func (p *pacer) wait(ctx context.Context) error {
	p.mu.Lock()
	now := time.Now()
	at := now
	if p.due.After(now) {
		at = p.due
	}
	p.due = at.Add(p.interval)
	p.mu.Unlock()
	if !at.After(now) {
		return nil
	}
	if p.sleep != nil {
		return p.sleep(ctx, at.Sub(now))
	}
	return wait.Sleep(ctx, at.Sub(now))
}
