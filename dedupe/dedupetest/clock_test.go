package dedupetest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe/dedupetest"
)

func TestClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)
	c := dedupetest.NewClock(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want the start %v", got, start)
	}

	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			c.Advance(time.Second)
			c.Now()
		})
	}
	wg.Wait()
	if got, want := c.Now(), start.Add(10*time.Second); !got.Equal(want) {
		t.Fatalf("after 10 concurrent one-second advances Now() = %v, want %v", got, want)
	}
}
