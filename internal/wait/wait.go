// Package wait holds the one way hookgate waits for a while: a sleep that
// ends early when its context does.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends (returning its error). A d that is not
// positive returns nil at once, without a timer: callers that compute a
// wait ask for none most of the time.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
