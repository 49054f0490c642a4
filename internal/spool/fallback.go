package spool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// Defaults of FallbackOptions.
const (
	// DefaultTimeout bounds one write to the inbox before the events go to
	// the spool instead.
	DefaultTimeout = 2 * time.Second
	// DefaultRetry is how long, after the inbox failed, events go straight
	// to the spool before the inbox is tried again.
	DefaultRetry = time.Second
	// DrainBatch is how many spooled events one drain moves.
	DrainBatch = 500
)

// FallbackOptions tune a Fallback; zero values mean the defaults.
type FallbackOptions struct {
	Timeout, Retry time.Duration
	// Now is the clock of the retry; nil means time.Now.
	Now func() time.Time
	// Logger hears when spooling starts and ends; nil discards.
	Logger *slog.Logger
}

// Fallback is the acceptor intake writes through when the spool is on: the
// inbox while it answers, the spool when it does not. Run drains the spool
// into the inbox.
type Fallback struct {
	inbox Acceptor
	spool *Spool
	opts  FallbackOptions
	wake  chan struct{}

	mu        sync.Mutex
	downUntil time.Time // events go straight to the spool until then
	down      bool      // the last write to the inbox failed
}

// NewFallback returns the acceptor of inbox with spool behind it.
func NewFallback(in Acceptor, sp *Spool, opts FallbackOptions) *Fallback {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Retry <= 0 {
		opts.Retry = DefaultRetry
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Fallback{inbox: in, spool: sp, opts: opts, wake: make(chan struct{}, 1)}
}

// The fallback is what intake writes through: it forwards the inbox's
// capabilities intake uses.
var (
	_ inbox.ParallelAcceptor = (*Fallback)(nil)
	_ inbox.DuplicateCounter = (*Fallback)(nil)
)

// AcceptWriters is the inbox's number of concurrent writers.
func (f *Fallback) AcceptWriters() int {
	if p, ok := f.inbox.(inbox.ParallelAcceptor); ok {
		return p.AcceptWriters()
	}
	return 1
}

// CountDuplicates hands duplicates the intake answered from memory to the
// inbox's counts, when it keeps them.
func (f *Fallback) CountDuplicates(ctx context.Context, bySource map[string]int64) error {
	if c, ok := f.inbox.(inbox.DuplicateCounter); ok {
		return c.CountDuplicates(ctx, bySource)
	}
	return nil
}

// Accept writes items to the inbox; when the inbox is unavailable (or does
// not answer within the timeout) it puts them into the spool instead, and
// the outcomes are the spool's. Any other error of the inbox is returned.
func (f *Fallback) Accept(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	if !f.skipInbox() {
		outs, err := f.tryInbox(ctx, items)
		if err == nil {
			f.setDown(false, nil)
			return outs, nil
		}
		if !errors.Is(err, errUnreachable) {
			return nil, err
		}
		f.setDown(true, err)
	}
	outs, err := f.spool.Put(ctx, items)
	if err != nil {
		return nil, err
	}
	select {
	case f.wake <- struct{}{}:
	default:
	}
	return outs, nil
}

// errUnreachable marks an inbox write that failed for want of the inbox
// (unavailable, or out of time), as opposed to one it refused.
var errUnreachable = errors.New("inbox unreachable")

// tryInbox writes items to the inbox within the timeout.
func (f *Fallback) tryInbox(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	tctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	outs, err := f.inbox.Accept(tctx, items)
	if err != nil && (errors.Is(err, inbox.ErrUnavailable) || tctx.Err() != nil) {
		return nil, errors.Join(errUnreachable, err)
	}
	return outs, err
}

// skipInbox reports whether the inbox failed so recently that events go
// straight to the spool.
func (f *Fallback) skipInbox() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opts.Now().Before(f.downUntil)
}

// setDown records the inbox's state after a write, logging a change.
func (f *Fallback) setDown(down bool, err error) {
	f.mu.Lock()
	was := f.down
	f.down = down
	if down {
		f.downUntil = f.opts.Now().Add(f.opts.Retry)
	}
	f.mu.Unlock()
	switch {
	case down && !was:
		f.opts.Logger.Warn("inbox unreachable: spooling events on local disk", "err", err)
	case !down && was:
		f.opts.Logger.Info("inbox reachable again: new events go to it; the spool drains")
	}
}

// Spooling reports whether events are going to the spool: the last write
// to the inbox failed.
func (f *Fallback) Spooling() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down
}

// Degraded says why a node with this fallback is ready but degraded, or
// is "" when it is not (or f is nil: no spool): it spools, the inbox
// being out of reach, or its spool holds quarantined events, which need
// an operator. Either way the node takes events.
func (f *Fallback) Degraded() string {
	switch {
	case f == nil:
		return ""
	case f.Spooling():
		return "spooling (the database cannot be reached; events wait in the local spool)"
	}
	if n := f.spool.quarantined.Load(); n > 0 {
		return fmt.Sprintf("spool quarantine (%d spooled events cannot be decoded: see hookgate reconcile)", n)
	}
	return ""
}

// Run drains the spool into the inbox until ctx ends: at once (events a
// crash left in the spool), whenever events are spooled, and every retry
// period while some wait.
func (f *Fallback) Run(ctx context.Context) {
	tick := time.NewTicker(f.opts.Retry)
	defer tick.Stop()
	for {
		f.drainAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-tick.C:
		}
	}
}

// drainAll drains until the spool is empty or the inbox fails. While the
// inbox is known down it waits for the retry instead of trying.
func (f *Fallback) drainAll(ctx context.Context) {
	for ctx.Err() == nil && !f.skipInbox() {
		done, err := f.spool.Drain(ctx, timeoutAcceptor{f.inbox, f.opts.Timeout}, DrainBatch)
		for _, q := range done.Quarantined {
			f.opts.Logger.Error("spool: a spooled event cannot be decoded; it is quarantined (kept, listed by hookgate reconcile) and the drain goes on",
				"seq", q.Seq, "spooled_at", q.SpooledAt, "err", q.Reason, "bytes", len(q.Item))
		}
		if err != nil {
			if errors.Is(err, inbox.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
				f.setDown(true, err)
			} else {
				f.opts.Logger.Error("draining the spool", "err", err)
			}
			return
		}
		if done.Empty() {
			return
		}
		f.setDown(false, nil)
	}
}

// timeoutAcceptor bounds each Accept of an acceptor.
type timeoutAcceptor struct {
	Acceptor
	timeout time.Duration
}

func (t timeoutAcceptor) Accept(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	tctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	return t.Acceptor.Accept(tctx, items)
}
