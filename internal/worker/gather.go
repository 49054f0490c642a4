package worker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/wait"
)

// gathering holds the deliveries a lane has leased and not sent yet. A
// lane without batches sends each at once; a batch destination's wait
// here for others, up to its BatchWait. Each is leased on its own (a
// batch is as many deliveries as it carries events), so whatever limits
// the deliveries a dispatch leases limits the events batches carry.
type gathering struct {
	tasks []inbox.Task
	// since is when the oldest of tasks was leased.
	since time.Time
}

// size is how many deliveries one attempt of l carries at most.
func (l *lane) size() int { return max(l.dest.BatchMax, 1) }

// room is how many deliveries l may lease with free attempts of room:
// as many as free attempts carry, less those gathered (which a free
// attempt is kept for).
func (g *gathering) room(l *lane, free int) int {
	return max(free*l.size()-len(g.tasks), 0)
}

// due is when the gathered deliveries go even if they fill no batch.
func (g *gathering) due(l *lane) time.Time { return g.since.Add(l.dest.BatchWait) }

// take adds tasks, just leased, to g and returns the attempts to make
// now: every full batch, and the rest when all is set, when l waits for
// no more (BatchWait zero), or when the oldest has waited BatchWait.
func (g *gathering) take(l *lane, tasks []inbox.Task, all bool) [][]inbox.Task {
	now := l.p.opts.Now()
	if len(g.tasks) == 0 {
		g.since = now
	}
	g.tasks = append(g.tasks, tasks...)
	var out [][]inbox.Task
	n := l.size()
	for len(g.tasks) >= n {
		out = append(out, g.tasks[:n:n])
		g.tasks = g.tasks[n:]
		// The first full batch took every task gathered before: the
		// rest were leased now.
		g.since = now
	}
	if len(g.tasks) > 0 && (all || !now.Before(g.due(l))) {
		out = append(out, g.tasks)
		g.tasks = nil
	}
	if len(g.tasks) == 0 {
		g.tasks = nil
	}
	return out
}

// ship makes one attempt to deliver b, when it is due: a batch on a
// batch destination, its one delivery on another.
func (l *lane) ship(ctx context.Context, b []inbox.Task, due time.Time) []result {
	l.awaitSlot(ctx, len(b), due)
	if l.batch == nil {
		return []result{l.try(ctx, b[0])}
	}
	rs, health := l.attemptBatch(ctx, b)
	for _, r := range rs {
		l.count(r)
	}
	// The batch is one request to the destination: its health moves
	// once, however many events it carried.
	l.judge(ctx, health)
	return rs
}

// attemptBatch makes one attempt to deliver tasks as one batch and says
// how each ended, and what the attempt says of the destination's health:
// a failure when the batch failed as a whole (retryably) or every event
// of it is to be retried, a delivery otherwise.
func (l *lane) attemptBatch(ctx context.Context, tasks []inbox.Task) (rs []result, health result) {
	at := l.p.opts.Now()
	rs = make([]result, len(tasks))
	for i, t := range tasks {
		rs[i].done = inbox.Done{Attempt: inbox.Attempt{EventID: t.Event.ID, Destination: l.key.Destination, At: at}}
		rs[i].key = t.Delivery.OrderKey
	}
	fail := func(msg string, retryable bool, retryAfter time.Duration) {
		for i, t := range tasks {
			rs[i] = l.failed(rs[i], t.Delivery.Attempts+1, msg, retryable, retryAfter)
		}
		health = result{failure: retryable, retryAfter: retryAfter,
			done: inbox.Done{Status: inbox.DeliveryFailed, Attempt: inbox.Attempt{Error: msg}}}
	}
	defer func() {
		// A panic making the attempt (it should not happen) fails the
		// attempt, not the lane.
		if v := recover(); v != nil {
			l.p.opts.Logger.Error("panic delivering a batch", "events", len(tasks), "destination", l.key.Destination, "panic", v)
			fail(fmt.Sprintf("panic: %v", v), true, 0)
		}
	}()
	ms := make([]deliver.Message, len(tasks))
	for i, t := range tasks {
		ms[i] = taskMessage(t)
	}
	out := l.batch.SendBatch(ctx, ms)
	if out.Duration == 0 {
		out.Duration = l.p.opts.Now().Sub(at)
	}
	for i := range rs {
		rs[i].done.Attempt.Duration, rs[i].done.Attempt.Code, rs[i].done.Attempt.Body = out.Duration, out.Code, out.Body
	}
	of := fmt.Sprintf("batch %s of %d events", out.ID, len(tasks))
	if !out.Delivered {
		fail(fmt.Sprintf("%v (%s)", out.Err, of), out.Retryable, out.RetryAfter)
		// A 429's Retry-After holds the lane, as one delivery's does.
		health.done.Attempt.Code = out.Code
		return rs, health
	}
	retries := 0
	for i, t := range tasks {
		res := out.Results[i]
		because := ""
		if res.Error != "" {
			because = ": " + res.Error
		}
		switch res.Status {
		case deliver.ResultOK:
			rs[i].done.Status = inbox.DeliveryDelivered
		case deliver.ResultReject:
			rs[i] = l.failed(rs[i], t.Delivery.Attempts+1, fmt.Sprintf("deliver to %s: rejected in %s%s", l.key.Destination, of, because), false, 0)
		default:
			retries++
			rs[i] = l.failed(rs[i], t.Delivery.Attempts+1, fmt.Sprintf("deliver to %s: to retry, says %s%s", l.key.Destination, of, because), true, 0)
		}
	}
	health = result{done: inbox.Done{Status: inbox.DeliveryDelivered}}
	if retries == len(tasks) {
		health = result{failure: true, done: inbox.Done{Status: inbox.DeliveryPending,
			Attempt: inbox.Attempt{Error: fmt.Sprintf("deliver to %s: every event of %s to retry", l.key.Destination, of)}}}
	}
	return rs, health
}

// taskMessage is how t's event goes to the destination.
func taskMessage(t inbox.Task) deliver.Message {
	var applied inbox.Applied
	if t.Event.Applied != nil {
		applied = *t.Event.Applied
	}
	m := message(&t.Event, applied)
	withOrder(&m, t.Delivery)
	return m
}

// slotLate is how late past its slot a rated lane's attempt may be made:
// later, the node was held up (a loaded machine, a pause), and the attempt
// takes new slots rather than bunch with the ones after its own.
const slotLate = 10 * time.Millisecond

// dueAt is when the attempt carrying b is due: in a rated lane, at the
// last of its deliveries' slots (a batch's events count against the
// rate); else at once.
func (l *lane) dueAt(b []inbox.Task) time.Time {
	var due time.Time
	for _, t := range b {
		if t.Slot.After(due) {
			due = t.Slot
		}
	}
	if due.IsZero() {
		return l.p.opts.Now()
	}
	return due
}

// awaitSlot waits until due; in a rated lane woken more than slotLate
// after it, it takes k new slots and waits for the last, a few times at
// most. It returns at once when ctx ends (the node stops: the leases
// hold until the attempt is recorded).
func (l *lane) awaitSlot(ctx context.Context, k int, due time.Time) {
	for retakes := 0; ; retakes++ {
		if wait.Sleep(ctx, due.Sub(l.p.opts.Now())) != nil || l.rated == nil || retakes == 3 {
			return
		}
		if l.p.opts.Now().Sub(due) <= slotLate {
			return
		}
		slots, err := l.rated.Reslot(ctx, l.key, l.rateLimit(), k)
		if err != nil || len(slots) == 0 {
			l.p.logs.Error("taking new slots", "source", l.key.Source, "destination", l.key.Destination, "err", err)
			return
		}
		due = slices.MaxFunc(slots, time.Time.Compare)
	}
}
