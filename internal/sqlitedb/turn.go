package sqlitedb

import (
	"context"
	"database/sql"
	"math"
	"time"
)

// lock takes this process's turn to write, and unlock gives it back. Every
// write transaction on the database takes it first, so the goroutines of
// one process queue here, without holding a connection, rather than polling
// SQLite's lock on the busy timeout. Other processes on the same file still
// queue on the busy timeout.
func (d *DB) lock(ctx context.Context) (unlock func(), err error) {
	select {
	case d.turn <- struct{}{}:
		return func() { <-d.turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write runs fn in a write transaction of its own, taken in turn, commits
// it if fn succeeds, gives the turn back and returns once the commit is
// durable. It returns the errors of fn and of the database as they are;
// the stores wrap them.
func (d *DB) Write(ctx context.Context, fn func(*sql.Tx) error) error {
	seq, err := d.write(ctx, fn)
	if err != nil || d.wal == nil {
		return err
	}
	return d.wal.wait(ctx, seq)
}

// write runs fn in a write transaction taken in turn and commits it,
// without waiting for durability; seq numbers the commit for wal.wait.
func (d *DB) write(ctx context.Context, fn func(*sql.Tx) error) (seq uint64, err error) {
	unlock, err := d.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	tx, err := d.BeginTx(ctx, nil)
	if err := run(tx, err, fn); err != nil {
		return 0, err
	}
	if d.wal != nil {
		seq = d.wal.commit()
	}
	return seq, nil
}

// run runs fn in tx, which began with err, and commits tx if fn succeeds.
// A panic in fn rolls tx back on its way up: an open write transaction
// would hold SQLite's lock from every later writer.
func run(tx *sql.Tx, err error, fn func(*sql.Tx) error) error {
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			tx.Rollback()
			panic(r)
		}
	}()
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

// Unsynced reports how many of this process's commits no fsync of the WAL
// covers yet: the [DB.WriteLazy] ones since the last [DB.Write] returned.
// It is 0 on a database of the caller's ([Wrap]), whose commits fsync
// themselves.
func (d *DB) Unsynced() uint64 {
	if d.wal == nil {
		return 0
	}
	return d.wal.unsynced()
}

// WriteLazy is [DB.Write] for a transaction that is safe to lose in a
// crash because it is redone and nothing outside the database has seen
// it: it returns once committed, without waiting for the WAL's fsync. The
// WAL is written in order, so the transaction becomes durable with the
// next fsync of it, for any [DB.Write] or the next checkpoint, whichever
// comes first; it is never lost while a later durable commit is kept, and a
// crash never leaves half of it. On a database of the caller's ([Wrap]),
// whose commits fsync themselves, it is [DB.Write].
func (d *DB) WriteLazy(ctx context.Context, fn func(*sql.Tx) error) error {
	_, err := d.write(ctx, fn)
	return err
}
