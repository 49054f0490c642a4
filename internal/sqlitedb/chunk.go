package sqlitedb

import "time"

// ChunkTarget is how long one chunk of a sweep may hold the write turn:
// intake's commits wait behind at most one chunk.
const ChunkTarget = 10 * time.Millisecond

// Chunk sizes the transactions of a long delete (the sweep of expired
// keys, digests and events) by how long the last one took, so that each
// holds the write turn about ChunkTarget whatever a row costs: a few
// rows on a large, cold database, where each deleted row is a page read
// and written again, many on a small one.
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
	case d > ChunkTarget:
		c.n = max(1, int(int64(c.n)*int64(ChunkTarget)/int64(d)))
	case d < ChunkTarget/2:
		c.n = min(c.most, 2*c.n)
	}
}
