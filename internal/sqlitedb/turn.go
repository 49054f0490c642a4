package sqlitedb

import (
	"context"
	"database/sql"
	"math"
	"time"
)

// Lock takes this process's turn to write, and unlock gives it back. Every
// write transaction on the database takes it first, so the goroutines of
// one process queue here, without holding a connection, rather than polling
// SQLite's lock on the busy timeout. Other processes on the same file still
// queue on the busy timeout.
func (d *DB) Lock(ctx context.Context) (unlock func(), err error) {
	select {
	case d.turn <- struct{}{}:
		return func() { <-d.turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write runs fn in a write transaction of its own, taken in turn, and
// commits it if fn succeeds. It returns the errors of fn and of the
// database as they are; the stores wrap them.
func (d *DB) Write(ctx context.Context, fn func(*sql.Tx) error) error {
	unlock, err := d.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	tx, err := d.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// After returns now+d in Unix nanoseconds, saturating instead of wrapping
// for windows that reach past the year 2262.
func After(now int64, d time.Duration) int64 {
	if d > 0 && now > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return now + int64(d)
}
