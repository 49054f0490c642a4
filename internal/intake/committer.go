package intake

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// ErrClosed is returned by Submit once the committer is shutting down.
var ErrClosed = errors.New("intake: committer closed")

// DefaultMaxBatch caps how many events one transaction writes.
const DefaultMaxBatch = 1000

// CommitterOptions tune a Committer; zero values mean the defaults.
type CommitterOptions struct {
	// MaxBatch caps how many events one transaction writes; default
	// DefaultMaxBatch.
	MaxBatch int
	// RecentKeys is how many committed keys are remembered to answer
	// redeliveries without a transaction; default DefaultRecentKeys,
	// negative turns the memory off.
	RecentKeys int
	// Now is the clock the remembered windows are read against; nil means
	// time.Now. It must agree with the store's clock.
	Now func() time.Time
	// Committed, when set, is called after each write that stored new
	// events (the workers' wake-up). It must not block.
	Committed func()
}

// Committer is the group commit in front of an inbox: it collects the
// events of concurrent requests and writes them in one transaction, so
// many acknowledgements share one fsync. Copies of an event that is
// queued or being written join the first copy instead of being written
// again (single-flight): exactly one copy is New, the others get the
// first copy's result as Duplicate, or its error.
type Committer struct {
	store     Acceptor
	maxBatch  int
	recent    *recent
	now       func() time.Time
	committed func()
	queue     chan *pending
	stop      chan struct{}
	done      chan struct{}

	mu       sync.Mutex
	closed   bool
	inflight map[dedupe.Hash]*pending
	wg       sync.WaitGroup // Submit calls that may still enqueue
}

// Acceptor is the part of an inbox the committer writes through.
type Acceptor interface {
	Accept(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error)
}

// pending is one event on its way into the store.
type pending struct {
	item    inbox.Item
	outcome inbox.Outcome
	err     error
	done    chan struct{}
}

// NewCommitter starts a committer writing to store. Close stops it.
func NewCommitter(store Acceptor, opts CommitterOptions) *Committer {
	maxBatch := opts.MaxBatch
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	c := &Committer{
		store:     store,
		maxBatch:  maxBatch,
		now:       opts.Now,
		committed: opts.Committed,
		queue:     make(chan *pending, maxBatch),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		inflight:  make(map[dedupe.Hash]*pending),
	}
	if c.now == nil {
		c.now = time.Now
	}
	switch {
	case opts.RecentKeys == 0:
		c.recent = newRecent(DefaultRecentKeys)
	case opts.RecentKeys > 0:
		c.recent = newRecent(opts.RecentKeys)
	}
	go c.run()
	return c
}

// Submit offers items for storage and waits until each is decided. The
// outcomes are in the order of items. A per-item error (the store failed
// the batch it was in) is returned in errs; err is set only when nothing
// was submitted (ErrClosed). Submit waits for the decision even if ctx ends
// first, so that a caller never answers before the write it started is
// known; ctx only bounds the wait for room in the queue.
func (c *Committer) Submit(ctx context.Context, items []inbox.Item) (outs []inbox.Outcome, errs []error, err error) {
	outs = make([]inbox.Outcome, len(items))
	errs = make([]error, len(items))
	known := make([]bool, len(items))
	if c.recent != nil {
		now := c.now()
		for i := range items {
			if e, ok := c.recent.lookup(items[i].Event.Hash, now); ok {
				known[i] = true
				outs[i] = inbox.Outcome{Status: dedupe.Duplicate, FirstSeen: time.Unix(0, e.firstSeen), Expires: time.Unix(0, e.expires)}
			}
		}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, nil, ErrClosed
	}
	c.wg.Add(1)
	waits := make([]*pending, len(items))
	first := make([]bool, len(items))
	var fresh []*pending
	for i := range items {
		if known[i] {
			continue
		}
		h := items[i].Event.Hash
		if p, ok := c.inflight[h]; ok {
			waits[i] = p
			continue
		}
		p := &pending{item: items[i], done: make(chan struct{})}
		c.inflight[h] = p
		waits[i], first[i] = p, true
		fresh = append(fresh, p)
	}
	c.mu.Unlock()

enqueue:
	for i, p := range fresh {
		select {
		case c.queue <- p:
		case <-ctx.Done():
			c.fail(fresh[i:], ctx.Err())
			break enqueue
		}
	}
	c.wg.Done()

	for i, p := range waits {
		if p == nil {
			continue
		}
		<-p.done
		outs[i], errs[i] = p.outcome, p.err
		if !first[i] && p.err == nil && p.outcome.Status == dedupe.New {
			// A joined copy: the first copy was stored, so this one is its duplicate.
			outs[i] = inbox.Outcome{Status: dedupe.Duplicate, FirstSeen: p.outcome.FirstSeen, Expires: p.outcome.Expires}
		}
	}
	return outs, errs, nil
}

// fail decides ps with err without writing them.
func (c *Committer) fail(ps []*pending, err error) {
	c.mu.Lock()
	for _, p := range ps {
		delete(c.inflight, p.item.Event.Hash)
	}
	c.mu.Unlock()
	for _, p := range ps {
		p.err = err
		close(p.done)
	}
}

func (c *Committer) run() {
	defer close(c.done)
	batch := make([]*pending, 0, c.maxBatch)
	for {
		select {
		case p := <-c.queue:
			batch = append(batch[:0], p)
		case <-c.stop:
			// Submit no longer enqueues; write what is left.
			for {
				select {
				case p := <-c.queue:
					batch = append(batch[:0], p)
					c.drain(&batch)
					c.write(batch)
				default:
					return
				}
			}
		}
		c.drain(&batch)
		c.write(batch)
	}
}

// drain adds what is already queued to batch, up to maxBatch, without
// waiting: the batch is whatever arrived while the last write ran.
func (c *Committer) drain(batch *[]*pending) {
	for len(*batch) < c.maxBatch {
		select {
		case p := <-c.queue:
			*batch = append(*batch, p)
		default:
			return
		}
	}
}

func (c *Committer) write(batch []*pending) {
	items := make([]inbox.Item, len(batch))
	for i, p := range batch {
		items[i] = p.item
	}
	outs, err := c.store.Accept(context.Background(), items)
	c.mu.Lock()
	for _, p := range batch {
		delete(c.inflight, p.item.Event.Hash)
	}
	c.mu.Unlock()
	if err == nil && c.committed != nil {
		c.committed()
	}
	for i, p := range batch {
		if err != nil {
			p.err = err
		} else {
			p.outcome = outs[i]
			if c.recent != nil && outs[i].Status != dedupe.InFlight {
				c.recent.add(p.item.Event.Hash, outs[i].FirstSeen, outs[i].Expires)
			}
		}
		close(p.done)
	}
}

// Close stops taking new events, writes every event already submitted and
// answers its waiters, then returns.
func (c *Committer) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.done
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()
	close(c.stop)
	<-c.done
}
