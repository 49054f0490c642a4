package inbox

import (
	"errors"
	"fmt"

	"github.com/hookgate/hookgate/dedupe"
)

var (
	// ErrUnavailable is wrapped by every backend's error that means the
	// database could not do the work (unreachable, failing, out of time)
	// rather than refusing the call: intake answers it with 503, and the
	// spool takes the events instead. It is dedupe.ErrUnavailable, so one
	// check serves the dedupe stores and the inboxes.
	ErrUnavailable = dedupe.ErrUnavailable
	// ErrNoOwner is returned by Lease, Finish and Dispatch for an empty
	// owner: an event nobody holds has an empty owner, so Finish with one
	// would finish events that were never leased.
	ErrNoOwner = errors.New("inbox: lease owner is empty")
	// ErrBadResult is returned by Finish for a result whose status is not
	// processed, retry or dead, and by Dispatch for an unknown delivery
	// status.
	ErrBadResult = errors.New("inbox: invalid status")
)

// CheckLease checks the arguments of Lease; every backend calls it first,
// so every backend refuses the same calls.
func CheckLease(owner string) error {
	if owner == "" {
		return fmt.Errorf("inbox: lease: %w", ErrNoOwner)
	}
	return nil
}

// CheckFinish checks the arguments of Finish.
func CheckFinish(owner string, results []Result) error {
	if owner == "" {
		return fmt.Errorf("inbox: finish: %w", ErrNoOwner)
	}
	for _, r := range results {
		switch r.Status {
		case StatusProcessed, StatusRetry, StatusDead:
		default:
			return fmt.Errorf("inbox: finish event %d: %w %q", r.ID, ErrBadResult, r.Status)
		}
	}
	return nil
}

// CheckDispatch checks the arguments of Dispatch.
func CheckDispatch(owner string, done []Done) error {
	if owner == "" {
		return fmt.Errorf("inbox: dispatch: %w", ErrNoOwner)
	}
	for _, dn := range done {
		switch dn.Status {
		case DeliveryPending, DeliveryDelivered, DeliveryFailed:
		default:
			return fmt.Errorf("inbox: dispatch: event %d: %w %q", dn.Attempt.EventID, ErrBadResult, dn.Status)
		}
	}
	return nil
}
