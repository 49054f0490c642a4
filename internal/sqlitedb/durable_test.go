package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// heldFsync replaces db's fsync of the WAL with one that counts its calls
// and blocks each until the test sends on release.
type heldFsync struct {
	calls   atomic.Int32
	started chan struct{}
	release chan error
}

// begun waits for the next fsync to begin.
func (h *heldFsync) begun(t *testing.T) {
	t.Helper()
	select {
	case <-h.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no fsync began")
	}
}

// end lets the fsync under way end with err.
func (h *heldFsync) end(t *testing.T, err error) {
	t.Helper()
	select {
	case h.release <- err:
	case <-time.After(10 * time.Second):
		t.Fatal("no fsync is under way")
	}
}

// result waits for a Write started by insertAsync.
func result(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("a Write did not return")
		return nil
	}
}

func holdFsync(db *DB) *heldFsync {
	h := &heldFsync{started: make(chan struct{}, 16), release: make(chan error)}
	real := db.wal.fsync
	db.wal.fsync = func(f *os.File) error {
		h.calls.Add(1)
		h.started <- struct{}{}
		if err := <-h.release; err != nil {
			return err
		}
		return real(f)
	}
	return h
}

// openTable opens a database with the table t (v INTEGER).
func openTable(t *testing.T) *DB {
	t.Helper()
	db, _ := open(t)
	if _, err := db.Exec(`CREATE TABLE t (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// insertAsync writes row v in a Write of its own and reports its result.
func insertAsync(db *DB, v int) <-chan error {
	return insertAsyncCtx(context.Background(), db, v)
}

// insertAsyncCtx is insertAsync under ctx.
func insertAsyncCtx(ctx context.Context, db *DB, v int) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- db.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.Exec(`INSERT INTO t (v) VALUES (?)`, v)
			return err
		})
	}()
	return done
}

// waitRows waits until n rows of t are committed, as another connection
// sees them.
func waitRows(t *testing.T, db *DB, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got int
		if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows committed, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func returned(done <-chan error) bool {
	select {
	case err := <-done:
		if err != nil {
			panic(err)
		}
		return true
	default:
		return false
	}
}

// TestWriteWaitsForFsync: Write returns only after an fsync of the WAL
// that began after its commit; that fsync runs outside the write turn, so
// other writers commit meanwhile; and the commits made while one fsync
// runs share the next.
func TestWriteWaitsForFsync(t *testing.T) {
	t.Parallel()
	db := openTable(t)
	h := holdFsync(db)

	a := insertAsync(db, 1)
	h.begun(t)
	waitRows(t, db, 1)
	// While a's fsync runs, b, c and d commit: the turn is free.
	b, c, d := insertAsync(db, 2), insertAsync(db, 3), insertAsync(db, 4)
	waitRows(t, db, 4)
	if returned(a) || returned(b) || returned(c) || returned(d) {
		t.Fatal("a Write returned before the fsync of its commit ended")
	}
	h.end(t, nil)
	if err := result(t, a); err != nil {
		t.Fatal(err)
	}
	// a's fsync began before b, c and d committed: it does not cover
	// them. One more covers all three.
	h.begun(t)
	if returned(b) || returned(c) || returned(d) {
		t.Fatal("a Write returned on an fsync that began before its commit")
	}
	h.end(t, nil)
	for _, done := range []<-chan error{b, c, d} {
		if err := result(t, done); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.calls.Load(); n != 2 {
		t.Errorf("%d fsyncs for two rounds of commits, want 2", n)
	}
}

// TestFsyncFailureEndsDurableWrites: after a failed fsync, every durable
// write fails, even once the disk would take an fsync again.
func TestFsyncFailureEndsDurableWrites(t *testing.T) {
	t.Parallel()
	db := openTable(t)
	h := holdFsync(db)
	a := insertAsync(db, 1)
	h.begun(t)
	h.end(t, syscall.EIO)
	if err := result(t, a); !errors.Is(err, ErrSyncFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Write with a failed fsync: %v, want ErrSyncFailed and EIO", err)
	}
	b := insertAsync(db, 2)
	if err := result(t, b); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("Write after a failed fsync: %v, want ErrSyncFailed", err)
	}
	if n := h.calls.Load(); n != 1 {
		t.Errorf("%d fsyncs, want 1: none after the failure", n)
	}
}

// TestSyncFollowsReplacedWAL: once every connection has closed, SQLite
// deletes the WAL and the next connection creates another; the fsync must
// then be of the new file, not of the one it opened before.
func TestSyncFollowsReplacedWAL(t *testing.T) {
	t.Parallel()
	db, path := open(t)
	db.ckpt.stop()
	db.ckpt = nil
	db.SetMaxIdleConns(0)
	ctx := t.Context()
	write := func() {
		t.Helper()
		err := db.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.Exec(`CREATE TABLE IF NOT EXISTS t (v INTEGER); INSERT INTO t (v) VALUES (1)`)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	walInode := func() uint64 {
		t.Helper()
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	synced := func() uint64 {
		t.Helper()
		if db.wal.file == nil {
			t.Fatal("no WAL file was synced")
		}
		fi, err := db.wal.file.Stat()
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}

	for round := range 2 {
		// A connection held open keeps the WAL through the write.
		held, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := held.ExecContext(ctx, `SELECT 1 FROM sqlite_schema`); err != nil {
			t.Fatal(err)
		}
		write()
		if got, want := synced(), walInode(); got != want {
			t.Fatalf("round %d: fsync of WAL inode %d, the WAL is inode %d", round, got, want)
		}
		// The last connection closes: SQLite checkpoints and deletes the WAL.
		held.Close()
		if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("round %d: the WAL is still there after the last connection closed (%v)", round, err)
		}
	}
}
