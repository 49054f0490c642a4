package worker

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/metrics"
)

// job is one event of a batch on its way to an outcome. Its deliveries run
// concurrently, so the fields below mu are guarded by it.
type job struct {
	ev      inbox.Event
	src     Source
	applied inbox.Applied
	// invalid is why the event can never be processed (it dies without a
	// delivery); skip keeps an invalid event, or one whose check panicked,
	// from apply and delivery.
	invalid string
	skip    bool

	mu         sync.Mutex
	dead       []string // why, per destination that failed for good
	deadReason string
	retry      []string
	delay      time.Duration // the soonest a failed part wants another try
	retried    bool
	panicked   bool
}

// process leases one batch and takes every event in it to an outcome.
func (p *Pool) process(ctx context.Context, owner string) (n int, err error) {
	events, err := p.opts.Store.Lease(ctx, owner, p.opts.Batch, p.opts.Lease)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	// From here the batch is ours: finish it even if ctx ends, so that no
	// event waits for its lease to expire after a clean shutdown.
	ctx = context.WithoutCancel(ctx)
	jobs := make([]*job, len(events))
	for i, ev := range events {
		jobs[i] = &job{ev: ev}
	}
	defer func() {
		// A panic outside one event's handling (the store, say) is every
		// event's: each is retried, and counts it against its attempts.
		if r := recover(); r != nil {
			p.opts.Logger.Error("panic processing batch", "worker", owner, "panic", r)
			for _, j := range jobs {
				p.panicked(j, r)
			}
			n, err = len(jobs), p.finish(ctx, owner, jobs)
		}
	}()
	var todo []*job
	for _, j := range jobs {
		p.check(j)
		if !j.skip {
			todo = append(todo, j)
		}
	}
	todo = p.apply(ctx, todo)
	if err := p.deliverAll(ctx, todo); err != nil {
		for _, j := range todo {
			p.retryLater(j, j.ev.Attempts, err.Error())
		}
	}
	return len(events), p.finish(ctx, owner, jobs)
}

// finish records the jobs' outcomes and then tells the observer of the
// dead ones.
func (p *Pool) finish(ctx context.Context, owner string, jobs []*job) error {
	results := make([]inbox.Result, len(jobs))
	reasons := make([]string, len(jobs))
	for i, j := range jobs {
		results[i], reasons[i] = p.outcome(j)
	}
	if err := p.opts.Store.Finish(ctx, owner, results); err != nil {
		return fmt.Errorf("finish: %w", err)
	}
	for i, r := range results {
		if r.Status == inbox.StatusDead {
			p.observe(func() { p.opts.Observer.Dead(jobs[i].ev.Source, reasons[i]) })
		}
	}
	return nil
}

// check finds the events that cannot be processed: an unknown source or
// a payload its schema rejects.
func (p *Pool) check(j *job) {
	defer func() { j.skip = j.invalid != "" || j.panicked }()
	defer p.recoverInto(j)
	src, ok := p.opts.Sources[j.ev.Source]
	if !ok {
		j.invalid = fmt.Sprintf("source %q is not configured", j.ev.Source)
		return
	}
	j.src = src
	if src.Schema != nil {
		if err := validate(src.Schema, j.ev.Payload); err != nil {
			j.invalid = err.Error()
		}
	}
}

// apply applies the jobs' entities in one transaction and returns the jobs
// that go on to delivery. When the batch fails as a whole, each event is
// applied on its own, so that one event the store refuses does not hold
// back the others; the ones that still fail are retried.
func (p *Pool) apply(ctx context.Context, jobs []*job) []*job {
	if len(jobs) == 0 {
		return nil
	}
	events := make([]inbox.Event, len(jobs))
	for i, j := range jobs {
		events[i] = j.ev
	}
	applied, panicked, err := p.storeApply(ctx, events)
	if err == nil && len(applied) == len(jobs) {
		for i, a := range applied {
			jobs[i].applied = a
		}
		return jobs
	}
	if err == nil {
		err = fmt.Errorf("store returned %d results for %d events", len(applied), len(jobs))
	}
	if len(jobs) == 1 {
		if panicked != nil {
			p.panicked(jobs[0], panicked)
		} else {
			p.retryLater(jobs[0], jobs[0].ev.Attempts, "apply: "+err.Error())
		}
		return nil
	}
	p.opts.Logger.Warn("applying batch failed; applying events one by one", "events", len(jobs), "err", err)
	var ok []*job
	for _, j := range jobs {
		ok = append(ok, p.apply(ctx, []*job{j})...)
	}
	return ok
}

// storeApply calls the store's Apply; a panic there comes back as an error
// and as the panic's value.
func (p *Pool) storeApply(ctx context.Context, events []inbox.Event) (applied []inbox.Applied, panicked any, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked, err = r, fmt.Errorf("panic: %v", r)
		}
	}()
	applied, err = p.opts.Store.Apply(ctx, events)
	return applied, nil, err
}

// recoverInto records a panic while handling j against j.
func (p *Pool) recoverInto(j *job) {
	if r := recover(); r != nil {
		p.opts.Logger.Error("panic processing event", "event", j.ev.ID, "panic", r)
		p.panicked(j, r)
	}
}

// panicked records that handling j panicked with r: j is retried with the
// panic's message, and dies once its attempts run out.
func (p *Pool) panicked(j *job, r any) {
	j.mu.Lock()
	j.panicked = true
	j.mu.Unlock()
	p.retryLater(j, j.ev.Attempts, fmt.Sprintf("panic: %v", r))
}

// retryLater asks for another try of j after the backoff of attempt, for
// reason.
func (p *Pool) retryLater(j *job, attempt int, reason string) {
	p.retryAfter(j, p.backoff(attempt), reason)
}

func (p *Pool) retryAfter(j *job, delay time.Duration, reason string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.retried || delay < j.delay {
		j.delay = delay
	}
	j.retried = true
	j.retry = append(j.retry, reason)
}

// retryDelay is the delay before retrying d after its n-th failed
// attempt, which asked to wait retryAfter.
func (p *Pool) retryDelay(d Destination, n int, retryAfter time.Duration) time.Duration {
	initial, maxDelay := d.RetryInitial, d.RetryMaxDelay
	if initial <= 0 {
		initial = p.opts.BackoffBase
	}
	if maxDelay <= 0 {
		maxDelay = p.opts.BackoffMax
	}
	return deliver.NextDelay(n, initial, maxDelay, retryAfter, p.opts.Rand)
}

// backoff is the delay after the attempt-th failed attempt.
func (p *Pool) backoff(attempt int) time.Duration {
	return deliver.Backoff(max(attempt-1, 0), p.opts.BackoffBase, p.opts.BackoffMax, p.opts.Rand)
}

// deliverAll delivers every job to each destination it is for and has not
// yet received, with a bounded number of attempts in flight.
func (p *Pool) deliverAll(ctx context.Context, jobs []*job) error {
	if len(jobs) == 0 {
		return nil
	}
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ev.ID
	}
	done, err := p.opts.Store.Deliveries(ctx, ids)
	if err != nil {
		return fmt.Errorf("deliveries: %w", err)
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		for _, d := range j.src.Destinations {
			if !d.wants(j.applied) {
				continue
			}
			prev := done[j.ev.ID][d.Name]
			if prev.Status == inbox.DeliveryDelivered {
				continue
			}
			slots := p.slots[[2]string{j.src.Name, d.Name}]
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				defer p.recoverInto(j)
				p.attempt(ctx, j, d, prev.Attempts+1)
			})
		}
	}
	wg.Wait()
	return nil
}

// attempt makes attempt number n of delivering j to d and records it.
func (p *Pool) attempt(ctx context.Context, j *job, d Destination, n int) {
	out := p.opts.Client.Deliver(ctx, d.Destination, message(j))
	rec := inbox.Delivery{EventID: j.ev.ID, Destination: d.Name, Status: inbox.DeliveryDelivered,
		Code: out.Code, At: p.opts.Now()}
	outcome := metrics.DeliveryDelivered
	if !out.Delivered {
		rec.Status, rec.Error = inbox.DeliveryFailed, out.Err.Error()
		limit := maxAttempts(d)
		switch {
		case !out.Retryable:
			outcome = metrics.DeliveryDead
			p.fail(j, metrics.DeadDelivery, out.Err.Error())
		case n >= limit:
			outcome = metrics.DeliveryDead
			p.fail(j, metrics.DeadAttempts, fmt.Sprintf("%v (attempt %d of %d)", out.Err, n, limit))
		default:
			outcome = metrics.DeliveryRetry
			p.retryAfter(j, p.retryDelay(d, n, out.RetryAfter), out.Err.Error())
		}
	}
	if err := p.opts.Store.RecordDelivery(ctx, rec); err != nil {
		// An unrecorded delivery may be made again (with the same
		// webhook-id); losing the event would be worse.
		p.retryLater(j, j.ev.Attempts, "record delivery: "+err.Error())
	}
	p.opts.Observer.Delivered(j.ev.Source, d.Name, outcome, out.Duration)
}

// fail records that a destination will never take j.
func (p *Pool) fail(j *job, reason, msg string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.dead = append(j.dead, msg)
	// A refusal says more than running out of attempts.
	if j.deadReason == "" || reason == metrics.DeadDelivery {
		j.deadReason = reason
	}
}

func maxAttempts(d Destination) int {
	if d.MaxAttempts > 0 {
		return d.MaxAttempts
	}
	return DefaultMaxAttempts
}

// eventMaxAttempts is how many processing attempts an event gets when the
// processing itself fails (a panic): as many as its most patient
// destination.
func eventMaxAttempts(s Source) int {
	n := DefaultMaxAttempts
	if len(s.Destinations) > 0 {
		n = 0
		for _, d := range s.Destinations {
			n = max(n, maxAttempts(d))
		}
	}
	return n
}

// outcome is the result of j once its deliveries are done, and for a dead
// event the reason (one of the metrics.Dead* values).
func (p *Pool) outcome(j *job) (inbox.Result, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	id := j.ev.ID
	switch {
	case j.invalid != "":
		return inbox.Result{ID: id, Status: inbox.StatusDead, Error: j.invalid}, metrics.DeadInvalid
	case len(j.dead) > 0:
		return inbox.Result{ID: id, Status: inbox.StatusDead, Error: strings.Join(j.dead, "; ")}, j.deadReason
	case j.panicked && j.ev.Attempts >= eventMaxAttempts(j.src):
		msg := fmt.Sprintf("%s (attempt %d of %d)", strings.Join(j.retry, "; "), j.ev.Attempts, eventMaxAttempts(j.src))
		return inbox.Result{ID: id, Status: inbox.StatusDead, Error: msg}, metrics.DeadPanic
	case j.retried:
		return inbox.Result{ID: id, Status: inbox.StatusRetry, NextAttemptAt: p.opts.Now().Add(j.delay),
			Error: strings.Join(j.retry, "; ")}, ""
	}
	return inbox.Result{ID: id, Status: inbox.StatusProcessed}, ""
}

// observe calls the observer; a panic there is logged, as the outcome it
// reports is already recorded.
func (p *Pool) observe(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			p.opts.Logger.Error("panic in observer", "panic", r)
		}
	}()
	fn()
}

// message is how j's event goes to a destination.
func message(j *job) deliver.Message {
	ev := &j.ev
	h := map[string]string{
		"X-Hookgate-Source":   ev.Source,
		"X-Hookgate-Tenant":   ev.Tenant,
		"X-Hookgate-Scope":    ev.Scope,
		"X-Hookgate-Event-Id": ev.EventID,
	}
	if ev.EntityID != "" {
		h["X-Hookgate-Entity"] = ev.EntityType + "/" + ev.EntityID
	}
	if j.applied.Transition {
		h["X-Hookgate-Transition"] = j.applied.From + "->" + j.applied.To
	}
	return deliver.Message{WebhookID: ev.Hash.String(), Payload: ev.Payload, ContentType: contentType(ev), Headers: h}
}

// contentType is the event's Content-Type as received; when intake did not
// keep it, XML payloads (Salesforce notifications) are labelled as XML, and
// everything else goes as JSON (the deliver default).
func contentType(ev *inbox.Event) string {
	if ct := ev.Headers["Content-Type"]; ct != "" {
		return ct
	}
	if bytes.HasPrefix(bytes.TrimLeft(ev.Payload, " \t\r\n"), []byte("<")) {
		return "text/xml; charset=utf-8"
	}
	return ""
}
