package sweep

import (
	"testing"
	"time"
)

// A chunk grows while its transactions are quick, up to its most, and
// shrinks in proportion when one takes longer than Target, never
// below one row.
func TestChunk(t *testing.T) {
	c := NewChunk(1000)
	if c.Size() != 64 {
		t.Fatalf("first chunk %d rows, want 64", c.Size())
	}
	for range 10 {
		c.Took(time.Millisecond)
	}
	if c.Size() != 1000 {
		t.Fatalf("after quick chunks: %d rows, want the most, 1000", c.Size())
	}
	c.Took(300 * time.Millisecond)
	if c.Size() != 33 {
		t.Fatalf("after a chunk of 1000 rows took 300ms: %d rows, want 33 (10ms worth)", c.Size())
	}
	c.Took(7 * time.Millisecond)
	if c.Size() != 33 {
		t.Fatalf("a chunk near the target changed the size to %d", c.Size())
	}
	c.Took(time.Hour)
	if c.Size() != 1 {
		t.Fatalf("after a chunk took an hour: %d rows, want 1", c.Size())
	}
	if small := NewChunk(10); small.Size() != 10 {
		t.Fatalf("a chunk of at most 10 starts at %d", small.Size())
	}
}
