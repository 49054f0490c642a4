package sweep

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Run pauses after each full chunk, Share-1 times as long as the chunk
// took, so a sweep works at most one part in Share of the time. The bound
// is a lower one: a slow machine only makes the sweep longer.
func TestRunPauses(t *testing.T) {
	const work = 5 * time.Millisecond
	calls, given := 0, 0
	start := time.Now()
	deleted, err := Run(t.Context(), 4, func(limit int) (int, error) {
		calls++
		given += limit
		time.Sleep(work)
		if calls == 4 {
			return limit - 1, nil
		}
		return limit, nil
	})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	// Three full chunks, then one a row short. A chunk that took longer
	// than Target on a busy machine makes the next one smaller, so the
	// rows are counted from the limits Run gave.
	if calls != 4 || deleted != given-1 {
		t.Fatalf("%d calls deleted %d rows, want 4 calls and %d rows", calls, deleted, given-1)
	}
	if least := 3 * Share * work; took < least {
		t.Fatalf("three full chunks of %v and a short one took %v, want at least %v", work, took, least)
	}
}

// A pause is Share-1 times the chunk, and no more than MaxPause however
// long a chunk waited on a stalled database.
func TestPause(t *testing.T) {
	if got := Pause(5 * time.Millisecond); got != (Share-1)*5*time.Millisecond {
		t.Fatalf("pause after a chunk of 5ms: %v, want %v", got, (Share-1)*5*time.Millisecond)
	}
	if got := Pause(time.Minute); got != MaxPause {
		t.Fatalf("pause after a chunk that waited a minute: %v, want MaxPause (%v)", got, MaxPause)
	}
}

// A failed chunk ends the sweep; what it deleted is not counted, since
// its transaction did not commit. A context that ends during a pause ends
// the sweep with the context's error.
func TestRunStops(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	deleted, err := Run(t.Context(), 10, func(limit int) (int, error) {
		calls++
		if calls == 3 {
			return limit, boom
		}
		return limit, nil
	})
	if !errors.Is(err, boom) || deleted != 10+10 {
		t.Fatalf("deleted %d, %v; want 20 and the chunk's error", deleted, err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	deleted, err = Run(ctx, 10, func(limit int) (int, error) {
		cancel()
		time.Sleep(time.Millisecond)
		return limit, nil
	})
	if !errors.Is(err, context.Canceled) || deleted != 10 {
		t.Fatalf("deleted %d, %v; want 10 and context.Canceled", deleted, err)
	}
}
