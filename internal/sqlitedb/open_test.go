package sqlitedb

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens a database file in a directory of the test's own.
func open(t *testing.T) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hookgate.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// TestSettings reads the durability settings back from several connections
// of the pool.
func TestSettings(t *testing.T) {
	t.Parallel()
	db, _ := open(t)
	ctx := t.Context()
	var conns []*sql.Conn
	for range 3 {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for i, c := range conns {
		for _, p := range []struct {
			pragma, want string
		}{
			{"journal_mode", "wal"},
			{"synchronous", "1"},
			{"busy_timeout", "10000"},
			{"foreign_keys", "1"},
			{"temp_store", "2"},
		} {
			var got string
			if err := c.QueryRowContext(ctx, "PRAGMA "+p.pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != p.want {
				t.Errorf("connection %d: PRAGMA %s = %s, want %s", i, p.pragma, got, p.want)
			}
		}
	}
}

// TestImmediate checks that a transaction takes the write lock when it
// begins: another connection that will not wait cannot begin a write.
func TestImmediate(t *testing.T) {
	t.Parallel()
	db, path := open(t)
	ctx := t.Context()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()

	other, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, "BEGIN IMMEDIATE"); err == nil {
		t.Fatal("another connection began a write while a transaction of the DB was open")
	}
}

func TestNotDurable(t *testing.T) {
	t.Parallel()
	db, err := Open(":memory:")
	if err == nil {
		db.Close()
	}
	if !errors.Is(err, ErrNotDurable) {
		t.Fatalf("Open of an in-memory database: err = %v, want ErrNotDurable", err)
	}
	if _, err := os.Stat(":memory:"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(\":memory:\") left a file: %v", err)
	}
}

// The database and its WAL files hold every payload: only their owner may
// read them, whatever the umask.
func TestFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	db, path := open(t)
	if err := db.Migrate(t.Context(), KeyTable, KeySteps); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s: mode %o, want 600", filepath.Base(name), mode)
		}
	}
}

// TestWriteLazy: a lazy write commits without waiting for an fsync.
func TestWriteLazy(t *testing.T) {
	t.Parallel()
	db := openTable(t)
	ctx := t.Context()
	var fsyncs atomic.Int32
	real := db.wal.fsync
	db.wal.fsync = func(f *os.File) error {
		fsyncs.Add(1)
		return real(f)
	}
	for i := range 3 {
		err := db.WriteLazy(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO t (v) VALUES (?)`, i)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d rows (%v), want 3", n, err)
	}
	if calls := fsyncs.Load(); calls != 0 {
		t.Fatalf("%d fsyncs for lazy writes, want 0", calls)
	}
}
