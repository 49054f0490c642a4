package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
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
	return run(tx, err, fn)
}

// run runs fn in tx, which began with err, and commits tx if fn succeeds.
func run(tx *sql.Tx, err error, fn func(*sql.Tx) error) error {
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

// WriteLazy is [DB.Write] for a transaction that is safe to lose in a
// crash because it is redone and nothing outside the database has seen
// it: its commit does not wait for an fsync (synchronous=NORMAL on its
// connection for the one commit). The WAL is written in order, so the
// transaction becomes durable with the next commit that fsyncs it, any
// [DB.Write] or the next checkpoint, whichever comes first; it is never
// lost while a later synchronous commit is kept, and a crash never leaves
// half of it.
func (d *DB) WriteLazy(ctx context.Context, fn func(*sql.Tx) error) (err error) {
	unlock, err := d.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	conn, err := d.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = NORMAL"); err != nil {
		return err
	}
	defer func() {
		// The connection goes back to the pool, where every transaction
		// expects FULL; one that cannot be set back is thrown away.
		if _, serr := conn.ExecContext(context.Background(), "PRAGMA synchronous = FULL"); serr != nil {
			conn.Raw(func(any) error { return driver.ErrBadConn })
			err = errors.Join(err, serr)
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	return run(tx, err, fn)
}
