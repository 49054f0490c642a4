package inbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookgate/hookgate/dedupe"
)

// Fail wraps an error of a backend's operation op. Errors that are the
// caller's (an ended context, an invalid argument, an unknown id, marked
// with CallerError) keep their own identity; anything else came from the
// database and wraps dedupe.ErrUnavailable, which intake answers with 503
// and the spool takes over from.
func Fail(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return fmt.Errorf("inbox: %s: %w", op, err)
		}
		return fmt.Errorf("inbox: %s: %w (%v)", op, cerr, err)
	}
	var caller CallerError
	if errors.As(err, &caller) {
		return fmt.Errorf("inbox: %s: %w", op, caller.Err)
	}
	return Unavailable(op, err)
}

// Unavailable wraps err of operation op as the database's failure:
// dedupe.ErrUnavailable, once.
func Unavailable(op string, err error) error {
	if errors.Is(err, dedupe.ErrUnavailable) {
		return fmt.Errorf("inbox: %s: %w", op, err)
	}
	return fmt.Errorf("inbox: %s: %w: %w", op, dedupe.ErrUnavailable, err)
}

// CallerError marks an error inside a backend's transaction that the
// caller caused, so Fail does not report it as the store being
// unavailable.
type CallerError struct{ Err error }

func (e CallerError) Error() string { return e.Err.Error() }
