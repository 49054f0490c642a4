package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"

	// The pure-Go SQLite driver; it registers itself as "sqlite".
	_ "modernc.org/sqlite"
)

// busyTimeoutMillis is how long a connection waits for another connection
// or process to finish its write transaction before failing with
// SQLITE_BUSY.
const busyTimeoutMillis = 10_000

// ErrNotDurable is returned by [Open] and [Wrap] when SQLite did not take
// the settings durability depends on, for example on a file system where
// WAL cannot be used.
var ErrNotDurable = errors.New("sqlite: database cannot be made durable")

// DB is a SQLite database with hookgate's settings, its write turn, its
// prepared statements and, when [Open] opened it, its checkpointer. The
// embedded *sql.DB serves reads; writes go through [DB.Write] and
// [DB.WriteLazy].
type DB struct {
	*sql.DB
	// turn admits one write transaction of this process at a time.
	turn  chan struct{}
	stmts stmtCache
	ckpt  *checkpointer
	// sweeps is held for reading by each chunk of a [DB.Sweep] and for
	// writing by the checkpointer while it catches up before a restart.
	sweeps sync.RWMutex
	// wal fsyncs the WAL for Write when Open opened the database; nil for
	// a database of the caller's, whose commits fsync themselves.
	wal   *walSync
	owned bool
}

// Open opens (creating if absent) the SQLite database file at path with the
// settings described in the package documentation, and starts its
// checkpointer.
func Open(path string) (*DB, error) {
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := checkDurable(db, syncNormal); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	d := newDB(db)
	d.owned = true
	d.wal = newWALSync(path)
	d.ckpt = startCheckpointer(d, CheckpointInterval, CheckpointRestartPages, CheckpointWait)
	return d, nil
}

// Wrap returns a DB on a database the caller opened and keeps, after
// checking that it is in WAL mode with synchronous=FULL ([ErrNotDurable]
// if not), so that each commit fsyncs itself. The caller's settings stay as
// they are, checkpoints included; Close leaves the database open.
func Wrap(db *sql.DB) (*DB, error) {
	if err := checkDurable(db, syncFull); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return newDB(db), nil
}

func newDB(db *sql.DB) *DB {
	d := &DB{DB: db, turn: make(chan struct{}, 1)}
	d.stmts.db = db
	return d
}

// Close stops the checkpointer after a last checkpoint, closes the
// prepared statements and, if [Open] opened the database, closes it.
func (d *DB) Close() error {
	var err error
	if d.ckpt != nil {
		err = d.ckpt.stop()
		d.ckpt = nil
	}
	d.stmts.close()
	if d.owned {
		err = errors.Join(err, d.DB.Close())
	}
	if d.wal != nil {
		d.wal.close()
	}
	return err
}

// inMemory reports whether path names an in-memory database.
func inMemory(path string) bool { return path == "" || path == ":memory:" }

// createPrivate creates the database file, when it does not exist yet,
// readable and writable by its owner only: it holds every payload and the
// demo source's secret. SQLite creates the -wal and -shm files with the
// database file's permissions.
func createPrivate(path string) error {
	if inMemory(path) {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// dsn is the modernc.org/sqlite data source name for the file at path. The
// path travels as a file: URI so that '?', '#' and '%' in it are escaped
// rather than read as URI syntax.
func dsn(path string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMillis))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Add("_pragma", "wal_autocheckpoint(0)")
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: q.Encode()}
	return u.String()
}

// The values of PRAGMA synchronous that checkDurable accepts.
const (
	syncNormal = 1
	syncFull   = 2
)

// checkDurable opens a connection and reads back the settings that
// durability depends on: WAL mode, and synchronous at want.
func checkDurable(db *sql.DB, want int) error {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	var sync int
	if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return err
	}
	if mode != "wal" || sync != want {
		return fmt.Errorf("%w: journal_mode=%s synchronous=%d, want wal and %d", ErrNotDurable, mode, sync, want)
	}
	return nil
}
