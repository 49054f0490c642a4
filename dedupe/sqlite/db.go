package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"

	// The pure-Go SQLite driver; it registers itself as "sqlite".
	_ "modernc.org/sqlite"
)

// busyTimeoutMillis is how long a connection waits for another connection
// or process to finish its write transaction before failing with
// SQLITE_BUSY.
const busyTimeoutMillis = 10_000

// ErrNotDurable is returned by [OpenDB] when SQLite did not take the
// settings durability depends on, for example a file system on which WAL
// cannot be used.
var ErrNotDurable = errors.New("dedupe/sqlite: database cannot be made durable")

// OpenDB opens (creating if absent) the SQLite database file at path with
// the settings hookgate relies on, applied to every connection of the pool:
//
//   - journal_mode=WAL: readers do not block the writer nor it them;
//   - synchronous=FULL: every commit is fsync'd before it returns, so a
//     committed claim survives a crash or power loss;
//   - busy_timeout of 10 s: a connection that finds the database locked by
//     another connection or process waits for it instead of failing;
//   - BEGIN IMMEDIATE for every transaction: a transaction takes the write
//     lock when it begins, so concurrent writers queue on the busy timeout
//     instead of failing when a read lock cannot be upgraded;
//   - foreign_keys=ON.
//
// It checks that the journal mode and synchronous level took effect and
// returns [ErrNotDurable] if not. The gateway shares the returned *sql.DB
// between the dedupe table and its inbox.
func OpenDB(path string) (*sql.DB, error) {
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("dedupe/sqlite: open %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, fmt.Errorf("dedupe/sqlite: open %s: %w", path, err)
	}
	if err := checkDurable(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("dedupe/sqlite: open %s: %w", path, err)
	}
	return db, nil
}

// createPrivate creates the database file, when it does not exist yet,
// readable and writable by its owner only: it holds every payload and the
// demo source's secret. SQLite creates the -wal and -shm files with the
// database file's permissions.
func createPrivate(path string) error {
	if path == "" || path == ":memory:" {
		return nil // SQLite keeps these in memory
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
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: q.Encode()}
	return u.String()
}

// checkDurable opens a connection and reads back the settings that
// durability depends on.
func checkDurable(db *sql.DB) error {
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
	const full = 2
	if mode != "wal" || sync != full {
		return fmt.Errorf("%w: journal_mode=%s synchronous=%d, want wal and %d (FULL)", ErrNotDurable, mode, sync, full)
	}
	return nil
}
