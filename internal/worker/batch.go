package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/metrics"
)

// job is one event of a batch on its way to an outcome: dead (invalid),
// retry (processing failed), or processed for the destinations it is for,
// whose lanes then deliver it.
type job struct {
	ev      inbox.Event
	src     Source
	applied inbox.Applied
	// invalid is why the event can never be processed (it dies without a
	// delivery); skip keeps an invalid event, or one whose check panicked,
	// from apply.
	invalid string
	skip    bool

	retry    []string
	retried  bool
	panicked bool
}

// process leases one batch, validates and applies it, and finishes each
// event: dead, retry, or processed for the destinations that want it. No
// delivery happens here: the lanes make them, so a batch takes the time
// of a few store writes whatever its destinations do.
func (p *Pool) process(ctx context.Context, owner string) (n int, err error) {
	events, err := p.opts.Store.Lease(ctx, owner, p.opts.Batch, p.opts.Lease)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	if len(events) == p.opts.Batch {
		// More may be due: another worker takes the next batch meanwhile.
		select {
		case p.backlog <- struct{}{}:
		default:
		}
	}
	// From here the batch is ours: finish it even if ctx ends, so that no
	// event waits for its lease to expire after a clean shutdown.
	ctx, cancel := p.afterStop(ctx)
	defer cancel()
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
	if af, ok := p.opts.Store.(inbox.ApplyFinisher); ok && len(todo) > 0 {
		if done, err := p.applyFinish(ctx, owner, af, jobs, todo); done {
			return len(events), err
		}
	}
	p.apply(ctx, todo)
	return len(events), p.finish(ctx, owner, jobs)
}

// applyFinish applies todo and records the outcomes of jobs in one write
// of the store. It reports false, with nothing of it recorded, when that
// write failed: the batch then takes the writes of apply, which applies
// the events one by one when the batch cannot be, and of finish.
func (p *Pool) applyFinish(ctx context.Context, owner string, af inbox.ApplyFinisher, jobs, todo []*job) (bool, error) {
	events := eventsOf(todo)
	var (
		results []inbox.Result
		reasons []string
	)
	err := storeApplyFinish(ctx, af, owner, events, func(applied []inbox.Applied) ([]inbox.Result, error) {
		if len(applied) != len(todo) {
			return nil, fmt.Errorf("store returned %d results for %d events", len(applied), len(todo))
		}
		for i, a := range applied {
			todo[i].applied = a
		}
		results, reasons = p.outcomes(jobs)
		return results, nil
	})
	var lost *inbox.LostError
	if err != nil && !errors.As(err, &lost) {
		p.opts.Logger.Warn("applying and finishing batch in one write failed; applying, then finishing", "events", len(jobs), "err", err)
		return false, nil
	}
	return true, p.finished(jobs, results, reasons, err)
}

// eventsOf are the events of jobs, in order.
func eventsOf(jobs []*job) []inbox.Event {
	events := make([]inbox.Event, len(jobs))
	for i, j := range jobs {
		events[i] = j.ev
	}
	return events
}

// storeApplyFinish calls the store's ApplyFinish; a panic there (the
// store's or decide's, which the store's transaction rolls back on its
// way up) comes back as an error.
func storeApplyFinish(ctx context.Context, af inbox.ApplyFinisher, owner string, events []inbox.Event, decide func([]inbox.Applied) ([]inbox.Result, error)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return af.ApplyFinish(ctx, owner, events, decide)
}

// finish records the jobs' outcomes and then tells the observer of the
// dead ones.
func (p *Pool) finish(ctx context.Context, owner string, jobs []*job) error {
	results, reasons := p.outcomes(jobs)
	return p.finished(jobs, results, reasons, p.opts.Store.Finish(ctx, owner, results))
}

// outcomes are the results of jobs, and for the dead ones the reasons
// (see outcome).
func (p *Pool) outcomes(jobs []*job) ([]inbox.Result, []string) {
	results := make([]inbox.Result, len(jobs))
	reasons := make([]string, len(jobs))
	for i, j := range jobs {
		results[i], reasons[i] = p.outcome(j)
	}
	return results, reasons
}

// finished acts on the store's answer err to recording results: the lost
// events are counted, the dead ones told to the observer and the lanes of
// the delivering ones woken.
func (p *Pool) finished(jobs []*job, results []inbox.Result, reasons []string, err error) error {
	var lost *inbox.LostError
	switch {
	case errors.As(err, &lost):
		p.lost("event", lost.IDs)
	case err != nil:
		return fmt.Errorf("finish: %w", err)
	}
	gone := map[int64]bool{}
	if lost != nil {
		for _, id := range lost.IDs {
			gone[id] = true
		}
	}
	for i, r := range results {
		switch {
		case gone[r.ID]:
		case r.Status == inbox.StatusDead:
			p.died(jobs[i].ev.ID, jobs[i].ev.Source, reasons[i], r.Error)
		case len(r.Destinations) > 0:
			p.wakeLanes(jobs[i].ev.Source, r.Destinations)
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

// apply applies the jobs' entities in one transaction. When the batch
// fails as a whole, each event is applied on its own, so that one event
// the store refuses does not hold back the others; the ones that still
// fail are retried.
func (p *Pool) apply(ctx context.Context, jobs []*job) {
	if len(jobs) == 0 {
		return
	}
	applied, panicked, err := p.storeApply(ctx, eventsOf(jobs))
	if err == nil && len(applied) == len(jobs) {
		for i, a := range applied {
			jobs[i].applied = a
		}
		return
	}
	if err == nil {
		err = fmt.Errorf("store returned %d results for %d events", len(applied), len(jobs))
	}
	if len(jobs) == 1 {
		if panicked != nil {
			p.panicked(jobs[0], panicked)
		} else {
			p.retry(jobs[0], "apply: "+err.Error())
		}
		return
	}
	p.opts.Logger.Warn("applying batch failed; applying events one by one", "events", len(jobs), "err", err)
	for _, j := range jobs {
		p.apply(ctx, []*job{j})
	}
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
	j.panicked = true
	p.retry(j, fmt.Sprintf("panic: %v", r))
}

// retry asks for another try of j, after the backoff of its attempts, for
// reason.
func (p *Pool) retry(j *job, reason string) {
	j.retried = true
	j.retry = append(j.retry, reason)
}

// outcome is the result of j, and for a dead event the reason (one of the
// metrics.Dead* values).
func (p *Pool) outcome(j *job) (inbox.Result, string) {
	id := j.ev.ID
	switch {
	case j.invalid != "":
		return inbox.Result{ID: id, Status: inbox.StatusDead, Error: j.invalid}, metrics.DeadInvalid
	case j.panicked && j.ev.Attempts >= eventMaxAttempts(j.src):
		msg := fmt.Sprintf("%s (attempt %d of %d)", strings.Join(j.retry, "; "), j.ev.Attempts, eventMaxAttempts(j.src))
		return inbox.Result{ID: id, Status: inbox.StatusDead, Error: msg}, metrics.DeadPanic
	case j.retried:
		return inbox.Result{ID: id, Status: inbox.StatusRetry, NextAttemptAt: p.opts.Now().Add(p.backoff(j.ev.Attempts)),
			Error: strings.Join(j.retry, "; ")}, ""
	}
	var dests []string
	var keys map[string]string
	for _, d := range j.src.Destinations {
		if !d.wants(j.ev.Type, j.applied) {
			continue
		}
		dests = append(dests, d.Name)
		if d.ordered() {
			if keys == nil {
				keys = map[string]string{}
			}
			sel, _ := d.orderSelector()
			keys[d.Name] = orderKey(&j.ev, sel)
		}
	}
	return inbox.Result{ID: id, Status: inbox.StatusProcessed, Destinations: dests, OrderKeys: keys}, ""
}

// backoff is the delay after the attempt-th failed attempt.
func (p *Pool) backoff(attempt int) time.Duration {
	return deliver.Backoff(max(attempt-1, 0), p.opts.BackoffBase, p.opts.BackoffMax, p.opts.Rand)
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

// message is how an event, applied as a, goes to a destination.
func message(ev *inbox.Event, a inbox.Applied) deliver.Message {
	h := map[string]string{
		"X-Hookgate-Source":   ev.Source,
		"X-Hookgate-Tenant":   ev.Tenant,
		"X-Hookgate-Scope":    ev.Scope,
		"X-Hookgate-Event-Id": ev.EventID,
	}
	if ev.EntityID != "" {
		h["X-Hookgate-Entity"] = ev.EntityType + "/" + ev.EntityID
	}
	if a.Transition {
		h["X-Hookgate-Transition"] = a.From + "->" + a.To
	}
	// A tie was ordered by arrival, not by its version: the application
	// may want the provider's current state of the entity.
	if a.Tie {
		h["X-Hookgate-Tie"] = "true"
	}
	m := deliver.Message{WebhookID: ev.Hash.String(), Payload: ev.Payload, ContentType: contentType(ev), Headers: h,
		Source: ev.Source, Tenant: ev.Tenant, Type: ev.Type, OrderKey: ev.Hash.String()}
	if ev.EntityID != "" {
		m.OrderKey = ev.Tenant + "/" + ev.EntityType + "/" + ev.EntityID
	}
	return m
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
