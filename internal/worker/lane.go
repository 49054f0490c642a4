package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/metrics"
	"github.com/hookgate/hookgate/internal/wait"
)

// lane delivers one source's events to one destination. Its deliveries
// are leased, paced and paused on their own: a destination that hangs or
// fails fills its own max_in_flight and opens its own circuit, and never
// holds a delivery of another lane.
type lane struct {
	p    *Pool
	key  inbox.Lane
	dest Destination
	// send makes the lane's attempts: dest.Sender, or the pool's Client
	// posting to dest.
	send  deliver.Sender
	limit int
	// batch, for a destination with BatchMax, sends its batches.
	batch deliver.BatchSender
	// ordered, for a destination with order: entity, is the store's
	// ordered dispatch; nil for any other.
	ordered inbox.OrderedDispatcher
	// rated, for a destination with rate:, is the store's rated
	// dispatch; nil for any other.
	rated inbox.RatedDispatcher
	// wake tells the dispatcher that deliveries may be due (an event of
	// this lane was finished by a worker of this node).
	wake chan struct{}

	mu      sync.Mutex
	circuit circuit
	// hold is when the destination takes deliveries again after it
	// answered 429 with a Retry-After: the lane leases none before it
	// (nor, when it is rated, does any other node).
	hold time.Time
}

// circuit is a lane's health. After PauseAfter consecutive failed
// attempts the lane is paused until until: no delivery is leased, so no
// event spends its attempts on a destination that is down. Then one
// delivery probes it; success closes the circuit, failure pauses again.
type circuit struct {
	state    string
	failures int
	until    time.Time
	lastErr  string
	changed  time.Time
	// keys, in an ordered lane, are the keys whose failures the streak
	// has counted: one key failing again (one entity the destination
	// cannot take) says nothing new of the destination, so it cannot
	// pause the lane, and with it the other keys, on its own.
	keys map[string]bool
}

// result is an attempt that ended: what to record, and whether its
// failure counts against the lane's health.
type result struct {
	done    inbox.Done
	failure bool
	// key is the delivery's order key; "" in a lane without order.
	key string
	// retryAfter is the wait the destination asked for, if it did.
	retryAfter time.Duration
}

// Errors New returns for a destination the store cannot serve.
var (
	// ErrNoOrder: order: entity on a store that cannot keep per-key
	// order.
	ErrNoOrder = errors.New("worker: the store cannot keep per-key order")
	// ErrNoRate: rate: on a store that cannot keep a rate.
	ErrNoRate = errors.New("worker: the store cannot keep a destination's rate")
)

// ErrNoBatch is returned by New for a destination with BatchMax whose
// sender cannot send batches.
var ErrNoBatch = errors.New("worker: the destination cannot take batches")

// newLane returns the lane of src's destination d.
func newLane(p *Pool, src string, d Destination) (*lane, error) {
	n := d.MaxInFlight
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	send := d.Sender
	if send == nil {
		send = p.opts.Client.Sender(d.Destination)
	}
	l := &lane{
		p: p, key: inbox.Lane{Source: src, Destination: d.Name}, dest: d, send: send, limit: n,
		wake:    make(chan struct{}, 1),
		circuit: circuit{state: inbox.LaneHealthy},
	}
	if d.ordered() {
		od, ok := p.opts.Store.(inbox.OrderedDispatcher)
		if !ok {
			return nil, fmt.Errorf("source %s destination %s: %w", src, d.Name, ErrNoOrder)
		}
		if _, err := d.orderSelector(); err != nil {
			return nil, fmt.Errorf("source %s destination %s: order key: %w", src, d.Name, err)
		}
		l.ordered = od
	}
	if d.Rate.Events > 0 {
		rd, ok := p.opts.Store.(inbox.RatedDispatcher)
		if !ok {
			return nil, fmt.Errorf("source %s destination %s: %w", src, d.Name, ErrNoRate)
		}
		l.rated = rd
	}
	if d.BatchMax > 0 {
		bs, ok := send.(deliver.BatchSender)
		if !ok {
			return nil, fmt.Errorf("source %s destination %s: %w", src, d.Name, ErrNoBatch)
		}
		l.batch = bs
	}
	return l, nil
}

// notify wakes the lane's dispatcher; it never blocks.
func (l *lane) notify() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// restore takes up a state recorded earlier (by this node before a
// restart, or by another node): a paused lane stays paused until its time.
func (l *lane) restore(st inbox.LaneState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.circuit = circuit{state: st.State, failures: st.Failures, until: st.Until, lastErr: st.LastError, changed: st.Changed}
}

// room is how many deliveries the lane may lease with inFlight of its
// own running: none while paused or held by a Retry-After, one probe once
// the pause is over and nothing runs, else what max_in_flight leaves.
func (l *lane) room(inFlight int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p.opts.Now().Before(l.hold) {
		return 0
	}
	if l.circuit.state == inbox.LanePaused {
		if inFlight > 0 || l.p.opts.Now().Before(l.circuit.until) {
			return 0
		}
		return 1
	}
	return max(l.limit-inFlight, 0)
}

// lingerFor is how long a lane with attempts in flight waits for more of
// them to end before it records the ended ones and leases more: attempts
// that end one by one are then recorded several to a write, so that a
// transaction per attempt does not make the store, rather than the
// destination, the limit.
const lingerFor = 2 * time.Millisecond

// run dispatches the lane's deliveries until ctx ends, then lets the
// attempts in flight end (each is bounded by the destination's timeout),
// records them and returns.
func (l *lane) run(ctx context.Context) {
	owner := l.p.name + ":" + l.key.Source + "/" + l.key.Destination
	results := make(chan []result, l.limit)
	store, cancel := l.p.afterStop(ctx)
	defer cancel()
	half := max(l.limit/2, 1)
	var (
		pending  []result
		inFlight int
		gathered gathering
		// overdue: the gathered deliveries have waited long enough.
		overdue bool
		// poll: deliveries may be due (woken, a slot freed, or Idle
		// passed); lingered: the linger after an ended attempt is over.
		poll, lingered, lingering, stopping = true, false, false, false
		// rateWait is when a rated lane's schedule has a slot again.
		rateWait time.Duration
	)
	idle := time.NewTimer(l.p.opts.Idle)
	defer idle.Stop()
	linger := time.NewTimer(lingerFor)
	defer linger.Stop()
	gather := time.NewTimer(0)
	defer gather.Stop()
	launch := func(batches [][]inbox.Task) {
		for _, b := range batches {
			inFlight++
			due := l.dueAt(b)
			go func() { results <- l.ship(store, b, due) }()
		}
	}
	for {
		launch(gathered.take(l, nil, stopping || overdue))
		overdue = false
		free := 0
		if poll && !stopping {
			free = l.room(inFlight)
		}
		want := gathered.room(l, free)
		work := len(pending) > 0 || want > 0
		ready := stopping || inFlight == 0 || lingered || len(pending) >= half || free >= half
		switch {
		case work && ready:
			lingered, lingering = false, false
			tasks, wait, err := l.dispatch(store, owner, pending, want)
			rateWait = wait
			switch {
			case err != nil && stopping:
				l.p.logs.Error("recording deliveries at shutdown", "source", l.key.Source, "destination", l.key.Destination, "err", err)
				pending = nil
			case err != nil:
				// Keep what ended, and try again after Idle.
				l.p.logs.Error("dispatching deliveries", "source", l.key.Source, "destination", l.key.Destination, "err", err)
				poll = false
			default:
				pending = pending[:0]
				poll = want > 0 && len(tasks) == want
				launch(gathered.take(l, tasks, false))
			}
		case work && !lingering:
			linger.Reset(lingerFor)
			lingering = true
		case !work:
			poll = false
		}
		if stopping && inFlight == 0 && len(pending) == 0 {
			return
		}
		if !poll {
			idle.Reset(l.nextPoll(rateWait))
		}
		done, lingerC, gatherC := ctx.Done(), linger.C, (<-chan time.Time)(nil)
		if stopping {
			done = nil
		}
		if !lingering {
			lingerC = nil
		}
		if len(gathered.tasks) > 0 {
			gather.Reset(gathered.due(l).Sub(l.p.opts.Now()))
			gatherC = gather.C
		}
		select {
		case rs := <-results:
			inFlight--
			pending = append(pending, rs...)
			for more := true; more; {
				select {
				case rs := <-results:
					inFlight--
					pending = append(pending, rs...)
				default:
					more = false
				}
			}
			poll = true
		case <-gatherC:
			overdue = true
		case <-lingerC:
			lingered, lingering = true, false
		case <-l.wake:
			poll = true
		case <-idle.C:
			poll = true
		case <-done:
			stopping = true
		}
	}
}

// round makes the lane's due deliveries in the calling goroutine, up to
// max_in_flight at once, until no more are due (or the lane pauses), and
// returns how many it made.
func (l *lane) round(ctx context.Context) (int, error) {
	owner := l.p.name + ":once:" + l.key.Source + "/" + l.key.Destination
	made := 0
	var ended []result
	for {
		// The attempts of the last pass are recorded in the write that
		// leases the next.
		var g gathering
		n := g.room(l, l.room(0))
		tasks, pause, err := l.dispatch(ctx, owner, ended, n)
		if err == nil && len(tasks) == 0 && pause > 0 {
			// Due deliveries wait for the rate: the round waits with
			// them.
			ended = nil
			err = wait.Sleep(ctx, pause)
			if err == nil {
				continue
			}
		}
		if err != nil || len(tasks) == 0 {
			return made, err
		}
		batches := g.take(l, tasks, true)
		sent := make([][]result, len(batches))
		var wg sync.WaitGroup
		for i, b := range batches {
			due := l.dueAt(b)
			wg.Go(func() { sent[i] = l.ship(ctx, b, due) })
		}
		wg.Wait()
		ended = slices.Concat(sent...)
		made += len(tasks)
		if len(tasks) < n && pause == 0 {
			_, _, err := l.dispatch(ctx, owner, ended, 0)
			return made, err
		}
	}
}

// dispatch records the ended attempts, moves the circuit, and leases up
// to n due deliveries, in one call to the store. It returns, for a rated
// lane whose schedule had fewer slots, when it has one again.
func (l *lane) dispatch(ctx context.Context, owner string, ended []result, n int) ([]inbox.Task, time.Duration, error) {
	done := make([]inbox.Done, len(ended))
	for i, r := range ended {
		done[i] = r.done
	}
	dispatch := l.p.opts.Store.Dispatch
	switch {
	case l.rated != nil:
		rl := l.rateLimit()
		dispatch = func(ctx context.Context, owner string, lane inbox.Lane, done []inbox.Done, n int, d time.Duration) (inbox.Dispatched, error) {
			return l.rated.DispatchRated(ctx, owner, lane, done, n, d, rl)
		}
	case l.ordered != nil:
		dispatch = l.ordered.DispatchOrdered
	}
	// A batch's deliveries are leased as they are gathered: their lease
	// spans the wait for the others too.
	out, err := dispatch(ctx, owner, l.key, done, n, l.p.opts.Lease+l.dest.BatchWait)
	if err != nil {
		return nil, 0, fmt.Errorf("dispatch %s/%s: %w", l.key.Source, l.key.Destination, err)
	}
	if len(out.Lost) > 0 {
		l.p.lost("delivery", out.Lost)
	}
	for _, st := range out.Settled {
		if st.Status == inbox.StatusDead {
			l.p.died(st.ID, st.Source, metrics.DeadDelivery, st.Error)
		}
	}
	return out.Tasks, out.Wait, nil
}

// rateLimit is what the rated lane leases under now.
func (l *lane) rateLimit() inbox.RateLimit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return inbox.RateLimit{Rate: l.dest.Rate, Hold: l.hold, Ordered: l.ordered != nil}
}

// nextPoll is how long the lane waits before it looks for due
// deliveries again when nothing wakes it: Idle, or less when its
// schedule has a slot again (rateWait) or a Retry-After ends sooner.
func (l *lane) nextPoll(rateWait time.Duration) time.Duration {
	next := l.p.opts.Idle
	if rateWait > 0 {
		next = min(next, rateWait)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if held := l.hold.Sub(l.p.opts.Now()); held > 0 {
		next = min(next, held)
	}
	return next
}

// try makes one delivery attempt of t and judges the destination's health
// by it before the attempt is recorded, so that the next lease already
// sees a circuit its failures opened.
func (l *lane) try(ctx context.Context, t inbox.Task) result {
	r := l.attempt(ctx, t)
	l.observe(ctx, r)
	return r
}

// attempt makes one delivery attempt of t and says how it ended.
func (l *lane) attempt(ctx context.Context, t inbox.Task) (r result) {
	at := l.p.opts.Now()
	n := t.Delivery.Attempts + 1
	r.done = inbox.Done{Attempt: inbox.Attempt{EventID: t.Event.ID, Destination: l.key.Destination, At: at}}
	r.key = t.Delivery.OrderKey
	defer func() {
		// A panic making the attempt (it should not happen) fails the
		// attempt, not the lane.
		if v := recover(); v != nil {
			l.p.opts.Logger.Error("panic delivering", "event", t.Event.ID, "destination", l.key.Destination, "panic", v)
			r = l.failed(r, n, fmt.Sprintf("panic: %v", v), true, 0)
		}
	}()
	out := l.send.Send(ctx, taskMessage(t))
	if out.Duration == 0 {
		out.Duration = l.p.opts.Now().Sub(at)
	}
	r.done.Attempt.Duration, r.done.Attempt.Code, r.done.Attempt.Body = out.Duration, out.Code, out.Body
	if out.Delivered {
		r.done.Status = inbox.DeliveryDelivered
		return r
	}
	return l.failed(r, n, out.Err.Error(), out.Retryable, out.RetryAfter)
}

// failed completes r, the n-th attempt, which failed with msg: another
// try after the backoff (at least retryAfter) while it is retryable and
// attempts remain, else failed for good.
func (l *lane) failed(r result, n int, msg string, retryable bool, retryAfter time.Duration) result {
	r.failure = retryable
	r.retryAfter = retryAfter
	limit := maxAttempts(l.dest)
	switch {
	case !retryable:
		r.done.Status = inbox.DeliveryFailed
	case n >= limit:
		r.done.Status = inbox.DeliveryFailed
		msg = fmt.Sprintf("%s (attempt %d of %d)", msg, n, limit)
	default:
		r.done.Status = inbox.DeliveryPending
		r.done.NextAttemptAt = l.p.opts.Now().Add(l.p.retryDelay(l.dest, n, retryAfter))
	}
	// A key of a blocking destination waits for an operator behind the
	// delivery that failed for good.
	r.done.Block = r.done.Status == inbox.DeliveryFailed && l.ordered != nil && l.dest.OnExhausted == OnExhaustedBlock
	r.done.Attempt.Error = msg
	return r
}

// observe reports an attempt to the observer and moves the circuit by
// it.
func (l *lane) observe(ctx context.Context, r result) {
	l.count(r)
	l.judge(ctx, r)
}

// count reports an attempt to the observer.
func (l *lane) count(r result) {
	outcome := metrics.DeliveryDelivered
	switch r.done.Status {
	case inbox.DeliveryPending:
		outcome = metrics.DeliveryRetry
	case inbox.DeliveryFailed:
		outcome = metrics.DeliveryDead
	}
	l.p.observe(func() {
		l.p.opts.Observer.Delivered(l.key.Source, l.key.Destination, outcome, r.done.Attempt.Duration)
	})
}

// judge moves the circuit by an attempt: a delivery closes it, a
// retryable failure counts towards opening it. A refusal (a 4xx, a
// redirect) says nothing of the destination's health.
func (l *lane) judge(ctx context.Context, r result) {
	if r.done.Status != inbox.DeliveryDelivered && !r.failure {
		return
	}
	l.mu.Lock()
	c, was := l.circuit, l.circuit.state
	now := l.p.opts.Now()
	if r.done.Attempt.Code == http.StatusTooManyRequests && r.retryAfter > 0 {
		// The destination says when it takes deliveries again: none is
		// leased before then.
		if until := now.Add(min(r.retryAfter, l.p.maxDelay(l.dest))); until.After(l.hold) {
			l.hold = until
		}
	}
	if r.done.Status == inbox.DeliveryDelivered {
		c.state, c.failures, c.until, c.keys = inbox.LaneHealthy, 0, time.Time{}, nil
	} else {
		if r.key != "" && c.state != inbox.LanePaused {
			if c.keys[r.key] {
				l.mu.Unlock()
				return
			}
			c.keys = maps.Clone(c.keys)
			if c.keys == nil {
				c.keys = map[string]bool{}
			}
			c.keys[r.key] = true
		}
		c.failures++
		c.lastErr = r.done.Attempt.Error
		switch {
		case l.dest.PauseAfter > 0 && c.failures >= l.dest.PauseAfter:
			if c.state != inbox.LanePaused || !now.Before(c.until) {
				c.state, c.until = inbox.LanePaused, now.Add(l.pauseFor())
			}
		case c.state == inbox.LaneHealthy:
			c.state = inbox.LaneFailing
		}
	}
	changed := c.state != was || (c.state == inbox.LanePaused && !c.until.Equal(l.circuit.until))
	if changed {
		c.changed = now
	}
	l.circuit = c
	l.mu.Unlock()
	if changed {
		l.p.laneChanged(ctx, l.key, was, c)
	}
}

func (l *lane) pauseFor() time.Duration {
	if l.dest.PauseFor > 0 {
		return l.dest.PauseFor
	}
	return DefaultPauseFor
}

// retryDelay is the delay before retrying d after its n-th failed
// attempt, which asked to wait retryAfter.
func (p *Pool) retryDelay(d Destination, n int, retryAfter time.Duration) time.Duration {
	initial := d.RetryInitial
	if initial <= 0 {
		initial = p.opts.BackoffBase
	}
	return deliver.NextDelay(n, initial, p.maxDelay(d), retryAfter, p.opts.Rand)
}

// maxDelay caps d's backoff and the wait its Retry-After asks for.
func (p *Pool) maxDelay(d Destination) time.Duration {
	if d.RetryMaxDelay > 0 {
		return d.RetryMaxDelay
	}
	return p.opts.BackoffMax
}
