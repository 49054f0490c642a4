package intake

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/front"
	"github.com/hookgate/hookgate/internal/inbox"
)

// ErrClosed is returned by Submit once the committer is shutting down.
var ErrClosed = errors.New("intake: committer closed")

// DefaultMaxBatch caps how many events one transaction writes.
const DefaultMaxBatch = 1000

// DefaultStoreTimeout is CommitterOptions.StoreTimeout when it is zero.
const DefaultStoreTimeout = 5 * time.Second

// ErrStoreTimeout is the error of a write the store did not finish within
// the store timeout. Nothing of it is answered as kept; whether the store
// kept it is unknown when the deadline came after its commit was sent, so
// a retry of its events may find them stored (a duplicate).
var ErrStoreTimeout = errors.New("intake: the store did not answer within the store timeout")

// CommitterOptions tune a Committer; zero values mean the defaults.
type CommitterOptions struct {
	// MaxBatch caps how many events one transaction writes (a request
	// with more is written alone, since a request is never split); default
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
	// Front, when set, is the Redis front the nodes share: the first copy
	// of each event is checked there before the store (see Committer).
	Front *front.Front
	// StoreTimeout is the deadline of each write to the store; zero means
	// DefaultStoreTimeout.
	StoreTimeout time.Duration
}

// countEvery is how often the committer hands the duplicates it answered
// from memory to an inbox.DuplicateCounter.
const countEvery = time.Second

// Committer is the group commit in front of an inbox: it collects the
// events of concurrent requests and writes them in one transaction, so
// many acknowledgements share one fsync. A request's events are never
// split between transactions. Copies of an event that is queued or being
// written join the first copy instead of being written again
// (single-flight): exactly one copy is New, the others get the first
// copy's result as Duplicate, or its error.
//
// A request with a replay guard digest is keyed twice: by its events'
// hashes and by its digest. While another request with the same digest,
// or with one of its events, is queued or being written, it waits for
// that write and then goes to the store itself, which decides from the
// digests and keys it keeps (a replay, a duplicate, or new if the first
// write failed). Joining is not enough for it: its own digest must be
// written, or a later replay of it would pass.
//
// With a Redis front, the first copy of each event of a request without a
// digest is claimed in Redis before it is queued: one that Redis knows as
// stored is a duplicate and one that another node is writing is in flight
// (409), both without the store; the others go to the store, which
// decides as without a front, and what it decided is then committed in
// Redis (or the claims released when the write failed). Redis is never the
// only line: a flushed or failed Redis sends events to the store, whose
// unique key still decides.
type Committer struct {
	store     Acceptor
	maxBatch  int
	timeout   time.Duration // of each write
	recent    *recent
	now       func() time.Time
	committed func()
	front     *front.Front
	settling  sync.WaitGroup  // front commits and releases in flight
	queue     chan []*pending // one request's new events each
	stop      chan struct{}
	done      chan struct{}
	writers   sync.WaitGroup // the run loops

	// writeErr is the error of the last write, nil once one succeeded.
	writeErr atomic.Pointer[error]

	mu       sync.Mutex
	closed   bool
	inflight map[dedupe.Hash]*pending
	digests  map[dedupe.Hash][]*pending // guarded requests queued or being written
	wg       sync.WaitGroup             // Submit calls that may still enqueue
	// remembered counts, by source, the duplicates answered from memory
	// and not yet handed to the store.
	remembered map[string]int64
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
	// lease is the front's claim on the event's key, when it has one.
	lease   dedupe.Lease
	claimed bool
}

// NewCommitter starts a committer writing to store. Close stops it.
func NewCommitter(store Acceptor, opts CommitterOptions) *Committer {
	maxBatch := opts.MaxBatch
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	timeout := opts.StoreTimeout
	if timeout <= 0 {
		timeout = DefaultStoreTimeout
	}
	c := &Committer{
		store:      store,
		maxBatch:   maxBatch,
		timeout:    timeout,
		now:        opts.Now,
		committed:  opts.Committed,
		front:      opts.Front,
		queue:      make(chan []*pending, maxBatch),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		inflight:   make(map[dedupe.Hash]*pending),
		digests:    make(map[dedupe.Hash][]*pending),
		remembered: make(map[string]int64),
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
	writers := 1
	if p, ok := store.(inbox.ParallelAcceptor); ok && p.AcceptWriters() > 1 {
		writers = p.AcceptWriters()
	}
	for range writers {
		c.writers.Go(c.run)
	}
	counter, _ := store.(inbox.DuplicateCounter)
	if counter != nil && (c.recent != nil || c.front != nil) {
		c.writers.Go(func() { c.countRemembered(counter) })
	}
	go func() {
		c.writers.Wait()
		close(c.done)
	}()
	return c
}

// countRemembered hands the duplicates answered from memory to counter
// every countEvery, and once more when the committer closes. Counts it
// could not hand over are kept for the next round.
func (c *Committer) countRemembered(counter inbox.DuplicateCounter) {
	tick := time.NewTicker(countEvery)
	defer tick.Stop()
	for {
		stopping := false
		select {
		case <-tick.C:
		case <-c.stop:
			stopping = true
		}
		var batch map[string]int64
		c.mu.Lock()
		if len(c.remembered) > 0 {
			batch, c.remembered = c.remembered, make(map[string]int64)
		}
		c.mu.Unlock()
		if batch != nil {
			// A write like any other: a hung store must not hold Close.
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
			err := counter.CountDuplicates(ctx, batch)
			cancel()
			if err != nil {
				c.mu.Lock()
				for src, n := range batch {
					c.remembered[src] += n
				}
				c.mu.Unlock()
			}
		}
		if stopping {
			return
		}
	}
}

// WriteErr is the error of the most recent write to the store, or nil when
// it succeeded (or nothing was written yet): a store that answers reads
// but fails every write (a full disk, a read-only file) shows here.
func (c *Committer) WriteErr() error {
	if p := c.writeErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Submit offers the items of one request for storage and waits until each
// is decided. Items with a Digest must all carry the same one. The
// outcomes are in the order of items. A per-item error (the store failed
// the batch it was in) is returned in errs; err is set only when nothing
// was submitted (ErrClosed, or ctx ended while a guarded request waited
// for a copy's write). Submit waits for the decision even if ctx ends
// first, so that a caller never answers before the write it started is
// known; ctx only bounds the waits before anything is queued.
func (c *Committer) Submit(ctx context.Context, items []inbox.Item) (outs []inbox.Outcome, errs []error, err error) {
	outs = make([]inbox.Outcome, len(items))
	errs = make([]error, len(items))
	var digest dedupe.Hash
	if len(items) > 0 {
		digest = items[0].Digest
	}
	guarded := digest != dedupe.Hash{}
	known := make([]bool, len(items))
	// A guarded request skips the memory of committed keys: answering it
	// there would leave its digest unwritten.
	if c.recent != nil && !guarded {
		now := c.now()
		var hits []string
		for i := range items {
			if e, ok := c.recent.lookup(items[i].Event.Hash, now); ok {
				known[i] = true
				outs[i] = inbox.Outcome{Status: dedupe.Duplicate, FirstSeen: time.Unix(0, e.firstSeen), Expires: time.Unix(0, e.expires)}
				hits = append(hits, items[i].Event.Source)
			}
		}
		if len(hits) > 0 {
			c.mu.Lock()
			for _, src := range hits {
				c.remembered[src]++
			}
			c.mu.Unlock()
		}
	}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, nil, ErrClosed
		}
		if !guarded {
			break
		}
		blockers := c.blockers(digest, items)
		if len(blockers) == 0 {
			break
		}
		c.mu.Unlock()
		if err := waitAll(ctx, blockers); err != nil {
			return nil, nil, err
		}
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
	if guarded {
		c.digests[digest] = fresh
	}
	c.mu.Unlock()

	if c.front != nil && !guarded && len(fresh) > 0 {
		fresh = c.checkFront(ctx, fresh)
	}
	if len(fresh) > 0 {
		select {
		case c.queue <- fresh:
		case <-ctx.Done():
			c.fail(fresh, ctx.Err())
			if c.front != nil {
				// Never written: the claims go now, not at the end of
				// their lease, so no node answers the sender's retry 409.
				c.settleFront(fresh, nil, ctx.Err())
			}
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

// checkFront claims the keys of ps, first copies not yet queued, in the
// Redis front. It decides the ones Redis knows (stored: duplicate; being
// written by another node: in flight) and returns the rest, for the store,
// with their claims.
func (c *Committer) checkFront(ctx context.Context, ps []*pending) []*pending {
	hashes := make([]dedupe.Hash, len(ps))
	for i, p := range ps {
		hashes[i] = p.item.Event.Hash
	}
	answers := c.front.Check(ctx, hashes)
	var rest, decided []*pending
	for i, p := range ps {
		a := answers[i]
		switch a.Verdict {
		case front.Duplicate:
			p.outcome = inbox.Outcome{Status: dedupe.Duplicate, FirstSeen: a.FirstSeen, Expires: a.Expires}
			decided = append(decided, p)
		case front.InFlightElsewhere:
			p.outcome = inbox.Outcome{Status: dedupe.InFlight, FirstSeen: a.FirstSeen, Expires: a.Expires}
			decided = append(decided, p)
		case front.Claimed:
			p.lease, p.claimed = a.Lease, true
			rest = append(rest, p)
		default:
			rest = append(rest, p)
		}
	}
	if len(decided) == 0 {
		return rest
	}
	c.forget(decided)
	c.mu.Lock()
	for _, p := range decided {
		if p.outcome.Status == dedupe.Duplicate {
			c.remembered[p.item.Event.Source]++
		}
	}
	c.mu.Unlock()
	for _, p := range decided {
		if c.recent != nil && p.outcome.Status == dedupe.Duplicate {
			c.recent.add(p.item.Event.Hash, p.outcome.FirstSeen, p.outcome.Expires)
		}
		close(p.done)
	}
	return rest
}

// settleFront tells the front what the store decided about batch (err: its
// write failed): the events it stored or found duplicate are committed in
// Redis with the store's times, so the next copy is answered there; the
// claims of a failed write, or of events another writer holds, are
// released. It runs after the answers, off the writer, and its errors need
// no handling: the store still decides the next copy.
func (c *Committer) settleFront(batch []*pending, outs []inbox.Outcome, err error) {
	var (
		commits []front.Committed
		leases  []dedupe.Lease
	)
	for i, p := range batch {
		switch {
		case err == nil && outs[i].Status != dedupe.InFlight:
			commits = append(commits, front.Committed{Hash: p.item.Event.Hash, FirstSeen: outs[i].FirstSeen, Expires: outs[i].Expires})
		case p.claimed:
			leases = append(leases, p.lease)
		}
	}
	c.settling.Go(func() {
		ctx := context.Background()
		c.front.Commit(ctx, commits...)
		c.front.Release(ctx, leases...)
	})
}

// blockers returns what a guarded request with digest and items must wait
// for: the request with the same digest, and each of its events, that is
// queued or being written. c.mu must be held.
func (c *Committer) blockers(digest dedupe.Hash, items []inbox.Item) []*pending {
	blockers := c.digests[digest]
	for i := range items {
		if p, ok := c.inflight[items[i].Event.Hash]; ok {
			blockers = append(blockers[:len(blockers):len(blockers)], p)
		}
	}
	return blockers
}

// waitAll waits until every p in ps is decided, or ctx ends.
func waitAll(ctx context.Context, ps []*pending) error {
	for _, p := range ps {
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// fail decides ps with err without writing them.
func (c *Committer) fail(ps []*pending, err error) {
	c.forget(ps)
	for _, p := range ps {
		p.err = err
		close(p.done)
	}
}

// forget removes ps, which have been decided, from the events and digests
// in flight.
func (c *Committer) forget(ps []*pending) {
	c.mu.Lock()
	for _, p := range ps {
		delete(c.inflight, p.item.Event.Hash)
		if d := p.item.Digest; d != (dedupe.Hash{}) {
			delete(c.digests, d)
		}
	}
	c.mu.Unlock()
}

// run is one writer: it takes a batch from the queue, writes it, and
// repeats until Close. Single-flight keeps an event out of two writers'
// batches at once.
func (c *Committer) run() {
	var next []*pending // a request that did not fit in the last batch
	batch := make([]*pending, 0, c.maxBatch)
	for {
		batch = batch[:0]
		if next != nil {
			batch, next = append(batch, next...), nil
		} else {
			select {
			case req := <-c.queue:
				batch = append(batch, req...)
			case <-c.stop:
				// Submit no longer enqueues; write what is left.
				select {
				case req := <-c.queue:
					batch = append(batch, req...)
				default:
					return
				}
			}
		}
		next = c.drain(&batch)
		c.write(batch)
	}
}

// drain adds the requests already queued to batch, up to maxBatch events,
// without waiting: the batch is whatever arrived while the last write ran.
// It returns the request that would have overflowed it, for the next
// batch; a request larger than maxBatch is written alone.
func (c *Committer) drain(batch *[]*pending) (next []*pending) {
	for len(*batch) < c.maxBatch {
		select {
		case req := <-c.queue:
			if len(*batch)+len(req) > c.maxBatch {
				return req
			}
			*batch = append(*batch, req...)
		default:
			return nil
		}
	}
	return nil
}

func (c *Committer) write(batch []*pending) {
	items := make([]inbox.Item, len(batch))
	for i, p := range batch {
		items[i] = p.item
	}
	outs, err := c.accept(items)
	if err != nil {
		c.writeErr.Store(&err)
	} else {
		c.writeErr.Store(nil)
	}
	c.forget(batch)
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
	if c.front != nil {
		c.settleFront(batch, outs, err)
	}
}

// accept writes items to the store within the store timeout. The store is
// given the deadline, and one that honours it (PostgreSQL cancels the
// statement, which rolls the batch back) returns at once; one that does
// not (an fsync on a stalled disk) is not waited for: its batch fails at
// the deadline and its write ends alone, whatever it then returns unseen,
// so no sender waits on a hung store.
//
// Only the deadline makes a timeout: a store error that comes back before
// it is the store's error, and a write that returned is taken as it
// returned even when the deadline is seen at the same moment.
func (c *Committer) accept(items []inbox.Item) ([]inbox.Outcome, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	type result struct {
		outs []inbox.Outcome
		err  error
	}
	done := make(chan result, 1)
	go func() {
		outs, err := c.store.Accept(ctx, items)
		done <- result{outs, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		select {
		case r = <-done:
		default:
			return nil, fmt.Errorf("%w (%v)", ErrStoreTimeout, c.timeout)
		}
	}
	if r.err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("%w (%v): %w", ErrStoreTimeout, c.timeout, r.err)
	}
	return r.outs, r.err
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
	c.settling.Wait()
}
