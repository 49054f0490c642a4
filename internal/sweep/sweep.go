// Package sweep paces the long deletes of retention (expired keys and
// replay digests, processed events) on both backends: each runs as a
// series of short transactions, sized by how long the last one took, with
// pauses between them, so that intake waits behind one short chunk at a
// time and the sweep's writes do not crowd its commits out of the disk.
package sweep

import (
	"context"
	"time"

	"github.com/hookgate/hookgate/internal/wait"
)

const (
	// Target is how long one chunk should take: intake's commits wait
	// behind at most about one chunk.
	Target = 10 * time.Millisecond
	// Share is the part of the time a sweep works: after each full chunk
	// it pauses Share-1 times as long as the chunk took. A sweep of a
	// large, cold SQLite file writes a scattered page per deleted key,
	// tens of thousands a second when it runs flat out, and every fsync of
	// intake's commits then waits behind those writes (an intake p99 of
	// 200 ms instead of 20 on the retention benchmark). PostgreSQL's own
	// autovacuum paces its writes for the same reason.
	Share = 10
	// MaxPause bounds a pause. A chunk that took long because it waited
	// (on a lock another session held, on a database that stalled for a
	// minute) wrote no more than a quick one, and nine times its wait
	// would stall the sweep long after the database came back.
	MaxPause = time.Second
)

// Chunk sizes the transactions of a sweep by how long the last one took,
// so that each takes about Target whatever a row costs: a few rows on a
// large, cold database, where each deleted row is a page read and written
// again, many on a small one.
type Chunk struct {
	n, most int
}

// NewChunk returns a Chunk of at most most rows, starting small.
func NewChunk(most int) *Chunk {
	return &Chunk{n: min(most, 64), most: most}
}

// Size is how many rows the next transaction takes.
func (c *Chunk) Size() int { return c.n }

// Took records that the last transaction, of Size rows, took d: a slower
// one shrinks the next in proportion, one under half the target doubles
// it.
func (c *Chunk) Took(d time.Duration) {
	switch {
	case d > Target:
		c.n = max(1, int(int64(c.n)*int64(Target)/int64(d)))
	case d < Target/2:
		c.n = min(c.most, 2*c.n)
	}
}

// Run runs a sweep: fn deletes at most limit rows in a transaction of its
// own and returns how many it deleted, and Run calls it again, with limits
// from a [Chunk] of at most most rows and a pause after each ([Pause]),
// until fn deletes fewer than its limit. It returns
// how many rows the committed transactions deleted, with the first error
// (the context's, if it ends during a pause).
func Run(ctx context.Context, most int, fn func(limit int) (int, error)) (int, error) {
	deleted := 0
	chunk := NewChunk(most)
	for {
		limit, start := chunk.Size(), time.Now()
		n, err := fn(limit)
		if err != nil {
			return deleted, err
		}
		deleted += n
		if n < limit {
			return deleted, nil
		}
		took := time.Since(start)
		chunk.Took(took)
		if err := wait.Sleep(ctx, Pause(took)); err != nil {
			return deleted, err
		}
	}
}

// Pause is how long a sweep waits after a full chunk that took took:
// Share-1 times as long, at most MaxPause.
func Pause(took time.Duration) time.Duration {
	return min((Share-1)*took, MaxPause)
}
