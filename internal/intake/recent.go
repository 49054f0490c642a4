package intake

import (
	"sync"
	"time"

	"github.com/hookgate/hookgate/dedupe"
)

// DefaultRecentKeys is how many committed keys a committer remembers when
// none is configured: about 50 bytes each.
const DefaultRecentKeys = 1 << 18

const recentShards = 32

// recent remembers keys this process saw committed, with their window, so
// that a redelivery is answered Duplicate without waiting for a write
// transaction. It only ever holds keys that are committed in the store;
// a committed key stays a duplicate until its window ends (nothing else
// un-commits it), so a hit is always the store's answer too. A miss says
// nothing and falls through to the store. When full, a shard forgets an
// arbitrary entry.
type recent struct {
	perShard int
	shards   [recentShards]recentShard
}

type recentShard struct {
	mu sync.Mutex
	m  map[dedupe.Hash]recentEntry
}

type recentEntry struct {
	firstSeen, expires int64
}

func newRecent(size int) *recent {
	r := &recent{perShard: max(size/recentShards, 1)}
	for i := range r.shards {
		r.shards[i].m = make(map[dedupe.Hash]recentEntry)
	}
	return r
}

func (r *recent) shard(h dedupe.Hash) *recentShard {
	return &r.shards[h[0]%recentShards]
}

// lookup reports the committed key h if it is known and its window has
// not ended at now.
func (r *recent) lookup(h dedupe.Hash, now time.Time) (recentEntry, bool) {
	s := r.shard(h)
	s.mu.Lock()
	e, ok := s.m[h]
	if ok && e.expires <= now.UnixNano() {
		delete(s.m, h)
		ok = false
	}
	s.mu.Unlock()
	return e, ok
}

// add remembers that h is committed from firstSeen until expires.
func (r *recent) add(h dedupe.Hash, firstSeen, expires time.Time) {
	s := r.shard(h)
	s.mu.Lock()
	if _, ok := s.m[h]; !ok && len(s.m) >= r.perShard {
		for k := range s.m {
			delete(s.m, k)
			break
		}
	}
	s.m[h] = recentEntry{firstSeen: firstSeen.UnixNano(), expires: expires.UnixNano()}
	s.mu.Unlock()
}
