package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// idChunk is how many ids one statement binds; it stays far below
// SQLite's limit on bound parameters.
const idChunk = 500

// write runs fn in a write transaction of its own, taken in the
// database's turn, committed if fn succeeds.
func (s *Store) write(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	if err := s.db.Write(ctx, fn); err != nil {
		return fail(ctx, op, err)
	}
	return nil
}

// process runs fn, a step of processing an event, in a write transaction
// of its own whose commit does not wait for an fsync (see
// sqlitedb.DB.WriteLazy): processing is redone after a crash that loses
// it, and nothing outside the database sees its result before a durable
// commit, such as the Dispatch that delivers the event, has made it
// durable too. Intake's commits, which acknowledge events, each wait for
// their fsync.
func (s *Store) process(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	if err := s.db.WriteLazy(ctx, fn); err != nil {
		return fail(ctx, op, err)
	}
	return nil
}

// fail wraps an error of operation op. Errors that are the caller's (an
// ended context, an invalid argument, an unknown id) keep their own
// identity; anything else came from the database and wraps
// dedupe.ErrUnavailable.
func fail(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return fmt.Errorf("inbox: %s: %w", op, err)
		}
		return fmt.Errorf("inbox: %s: %w (%v)", op, cerr, err)
	}
	var caller callerError
	if errors.As(err, &caller) {
		return fmt.Errorf("inbox: %s: %w", op, caller.err)
	}
	return unavailable(op, err)
}

// callerError marks an error inside a transaction that the caller caused,
// so fail does not report it as the store being unavailable.
type callerError struct{ err error }

func (e callerError) Error() string { return e.err.Error() }

// nanos is t in Unix nanoseconds, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos is the time of a Unix nanoseconds column; 0 is the zero time.
func fromNanos(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// placeholders returns n comma-separated question marks.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// int64Args returns ids as statement arguments.
func int64Args(ids []int64) []any {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args
}
