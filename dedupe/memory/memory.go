package memory

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookgate/hookgate/dedupe"
)

// shardCount is the number of independently locked maps; a power of two
// no larger than 256, since a shard is picked by the hash's first byte.
const shardCount = 64

// Options configures a [Store]. The zero value is ready to use.
type Options struct {
	// Now returns the current time; nil means [time.Now]. Tests pass a
	// manual clock to exercise expiry without waiting.
	Now func() time.Time
}

// Store is an in-memory [dedupe.Store]. It is safe for concurrent use.
type Store struct {
	now    func() time.Time
	tokens atomic.Uint64
	shards [shardCount]shard
}

var _ dedupe.Store = (*Store)(nil)

type shard struct {
	mu   sync.Mutex
	keys map[dedupe.Hash]entry
}

// entry is one claimed or committed key. Times are Unix nanoseconds; the
// key is claimable again once the clock reaches expires.
type entry struct {
	token     dedupe.Token
	firstSeen int64
	expires   int64
	committed bool
}

// New returns an empty store.
func New(opts Options) *Store {
	s := &Store{now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	for i := range s.shards {
		s.shards[i].keys = make(map[dedupe.Hash]entry)
	}
	return s
}

func (s *Store) shard(h dedupe.Hash) *shard {
	return &s.shards[h[0]%shardCount]
}

// Claim implements [dedupe.Store]. A hash repeated within one call sees the
// claim its first occurrence took.
func (s *Store) Claim(ctx context.Context, lease time.Duration, hashes ...dedupe.Hash) ([]dedupe.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dedupe/memory: claim: %w", err)
	}
	now := s.now().UnixNano()
	end := after(now, lease)
	rs := make([]dedupe.Result, len(hashes))
	for i, h := range hashes {
		sh := s.shard(h)
		sh.mu.Lock()
		e, held := sh.keys[h]
		if held && now < e.expires {
			status := dedupe.InFlight
			if e.committed {
				status = dedupe.Duplicate
			}
			rs[i] = dedupe.Result{Status: status, FirstSeen: unix(e.firstSeen), Expires: unix(e.expires)}
		} else {
			e = entry{token: dedupe.Token(s.tokens.Add(1)), firstSeen: now, expires: end}
			sh.keys[h] = e
			rs[i] = dedupe.Result{
				Status:    dedupe.New,
				Lease:     dedupe.Lease{Hash: h, Token: e.token},
				FirstSeen: unix(now),
				Expires:   unix(end),
			}
		}
		sh.mu.Unlock()
	}
	return rs, nil
}

// Commit implements [dedupe.Store]. Committing a lease again leaves the
// window its first commit set.
func (s *Store) Commit(ctx context.Context, window time.Duration, leases ...dedupe.Lease) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("dedupe/memory: commit: %w", err)
	}
	end := after(s.now().UnixNano(), window)
	var lost error
	for _, l := range leases {
		sh := s.shard(l.Hash)
		sh.mu.Lock()
		e, held := sh.keys[l.Hash]
		switch {
		case !held || e.token != l.Token:
			if lost == nil {
				lost = fmt.Errorf("dedupe/memory: commit %s: %w", l.Hash, dedupe.ErrLeaseLost)
			}
		case !e.committed:
			e.committed = true
			e.expires = end
			sh.keys[l.Hash] = e
		}
		sh.mu.Unlock()
	}
	return lost
}

// Release implements [dedupe.Store]. It drops only uncommitted claims: a
// lease that was committed keeps answering Duplicate until its window ends.
func (s *Store) Release(ctx context.Context, leases ...dedupe.Lease) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("dedupe/memory: release: %w", err)
	}
	for _, l := range leases {
		sh := s.shard(l.Hash)
		sh.mu.Lock()
		if e, held := sh.keys[l.Hash]; held && e.token == l.Token && !e.committed {
			delete(sh.keys, l.Hash)
		}
		sh.mu.Unlock()
	}
	return nil
}

// Sweep implements [dedupe.Store]. It locks one shard at a time, so claims
// on the other shards proceed meanwhile. If ctx ends part way, it returns
// what it removed so far with the context's error.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	now := s.now().UnixNano()
	removed := 0
	for i := range s.shards {
		if err := ctx.Err(); err != nil {
			return removed, fmt.Errorf("dedupe/memory: sweep: %w", err)
		}
		sh := &s.shards[i]
		sh.mu.Lock()
		for h, e := range sh.keys {
			if now >= e.expires {
				delete(sh.keys, h)
				removed++
			}
		}
		sh.mu.Unlock()
	}
	return removed, nil
}

// after returns now+d in Unix nanoseconds, saturating instead of wrapping
// for windows that reach past the year 2262.
func after(now int64, d time.Duration) int64 {
	if d > 0 && now > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return now + int64(d)
}

func unix(ns int64) time.Time {
	return time.Unix(0, ns).UTC()
}
