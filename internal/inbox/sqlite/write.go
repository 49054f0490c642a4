package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// idChunk is how many ids one statement binds; it stays far below
// SQLite's limit on bound parameters.
const idChunk = 500

// write runs fn in a write transaction of its own, taken in the
// database's turn, committed if fn succeeds.
func (s *Store) write(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	if err := s.db.Write(ctx, fn); err != nil {
		return inbox.Fail(ctx, op, err)
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
		return inbox.Fail(ctx, op, err)
	}
	return nil
}

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
