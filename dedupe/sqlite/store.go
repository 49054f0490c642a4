package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

// ErrNotDurable is returned by [Open] and [New] when SQLite did not take
// the settings durability depends on (WAL, and synchronous=FULL for a
// database given to New), for example for an in-memory database or on a
// file system where WAL cannot be used.
var ErrNotDurable = sqlitedb.ErrNotDurable

// Options configures a [Store]. The zero value is ready to use.
type Options struct {
	// Now returns the current time; nil means [time.Now]. Tests pass a
	// manual clock to exercise expiry without waiting.
	Now func() time.Time
}

// Store is a [dedupe.Store] kept in the dedupe_keys table of a SQLite
// database. It is safe for concurrent use by many goroutines and by many
// processes that open the same file.
type Store struct {
	db   *sqlitedb.DB
	keys sqlitedb.Keys
}

var _ dedupe.Store = (*Store)(nil)

// Open opens (creating if absent, readable by its owner only) the database
// file at path with the settings described in the package documentation,
// and returns a store on it; [Store.Close] closes the database.
func Open(path string, opts Options) (*Store, error) {
	db, err := sqlitedb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dedupe/sqlite: %w", err)
	}
	s, err := newStore(db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// New returns a store that keeps its keys in db, a database the caller
// opened and shares, for example to claim keys in its own transactions
// through [Store.Tx]. db must be in WAL mode with synchronous=FULL
// ([ErrNotDurable] if not), and should begin its transactions with BEGIN
// IMMEDIATE and wait on a busy timeout; with modernc.org/sqlite:
//
//	file:PATH?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_txlock=immediate
//
// New creates the dedupe_keys table and its index if they are absent, so
// calling it on a database that already has them is safe. [Store.Close]
// leaves db open.
func New(db *sql.DB, opts Options) (*Store, error) {
	d, err := sqlitedb.Wrap(db)
	if err != nil {
		return nil, fmt.Errorf("dedupe/sqlite: %w", err)
	}
	return newStore(d, opts)
}

func newStore(db *sqlitedb.DB, opts Options) (*Store, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	if err := db.Migrate(context.Background(), sqlitedb.KeyTable, sqlitedb.KeySteps); err != nil {
		return nil, fmt.Errorf("dedupe/sqlite: %w: %w", dedupe.ErrUnavailable, err)
	}
	return &Store{db: db, keys: db.Keys(now)}, nil
}

// Close closes the database if the store was made by [Open]; a store made
// by [New] leaves its database to the caller.
func (s *Store) Close() error {
	return s.db.Close()
}

// Tx returns the claim protocol bound to the caller's transaction tx, which
// should be a write transaction on the store's database. Claims, commits,
// releases and sweeps made through it become visible to others, and
// durable, only when the caller commits tx, and vanish if it rolls back: an
// application claims its keys, inserts its own rows and commits the keys in
// one transaction. The returned store must not be used after tx ends. While
// a goroutine holds tx, it must go through Tx: the store's own methods
// would wait for the write lock that tx holds.
func (s *Store) Tx(tx *sql.Tx) *TxStore {
	return &TxStore{keys: s.keys, tx: tx}
}

// Claim implements [dedupe.Store] in one transaction. A hash repeated
// within one call sees the claim its first occurrence took.
func (s *Store) Claim(ctx context.Context, lease time.Duration, hashes ...dedupe.Hash) ([]dedupe.Result, error) {
	if len(hashes) == 0 {
		return []dedupe.Result{}, nil
	}
	var rs []dedupe.Result
	err := s.write(ctx, "claim", func(tx *sql.Tx) error {
		var err error
		rs, err = s.keys.Claim(ctx, tx, lease, false, hashes)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// Commit implements [dedupe.Store] in one transaction. Committing a lease
// again leaves the window its first commit set.
func (s *Store) Commit(ctx context.Context, window time.Duration, leases ...dedupe.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	var lost error
	err := s.write(ctx, "commit", func(tx *sql.Tx) error {
		var err error
		lost, err = s.keys.Commit(ctx, tx, window, leases)
		return err
	})
	if err != nil {
		return err
	}
	return lostLease(lost)
}

// Release implements [dedupe.Store] in one transaction. It drops only
// uncommitted claims: a lease that was committed keeps answering Duplicate
// until its window ends.
func (s *Store) Release(ctx context.Context, leases ...dedupe.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	return s.write(ctx, "release", func(tx *sql.Tx) error {
		return s.keys.Release(ctx, tx, leases)
	})
}

// Sweep implements [dedupe.Store]. It deletes in transactions of at most
// a thousand keys, so claims wait behind one chunk, not the whole sweep. If
// a chunk fails, it returns what the committed chunks removed with the
// error.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	removed, err := s.keys.Sweep(ctx)
	if err != nil {
		return removed, fail(ctx, "sweep", err)
	}
	return removed, nil
}

// write runs fn in a transaction of its own, which it commits if fn
// succeeds. Errors fn returns from the database are wrapped by fail.
func (s *Store) write(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	if err := s.db.Write(ctx, fn); err != nil {
		return fail(ctx, op, err)
	}
	return nil
}

// fail wraps an error from the database. When ctx has ended, the error is
// the caller's doing, not the store's, and wraps ctx.Err(); otherwise it
// wraps [dedupe.ErrUnavailable].
func fail(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if err == cerr {
			return fmt.Errorf("dedupe/sqlite: %s: %w", op, cerr)
		}
		return fmt.Errorf("dedupe/sqlite: %s: %w (%v)", op, cerr, err)
	}
	return fmt.Errorf("dedupe/sqlite: %s: %w: %w", op, dedupe.ErrUnavailable, err)
}

// lostLease prefixes the report of a lease that lost its key.
func lostLease(lost error) error {
	if lost == nil {
		return nil
	}
	return fmt.Errorf("dedupe/sqlite: %w", lost)
}

// TxStore is the claim protocol inside a caller's transaction; see
// [Store.Tx].
type TxStore struct {
	keys sqlitedb.Keys
	tx   *sql.Tx
}

var _ dedupe.Store = (*TxStore)(nil)

// Claim implements [dedupe.Store].
func (t *TxStore) Claim(ctx context.Context, lease time.Duration, hashes ...dedupe.Hash) ([]dedupe.Result, error) {
	rs, err := t.keys.Claim(ctx, t.tx, lease, false, hashes)
	if err != nil {
		return nil, fail(ctx, "claim", err)
	}
	return rs, nil
}

// Commit implements [dedupe.Store].
func (t *TxStore) Commit(ctx context.Context, window time.Duration, leases ...dedupe.Lease) error {
	lost, err := t.keys.Commit(ctx, t.tx, window, leases)
	if err != nil {
		return fail(ctx, "commit", err)
	}
	return lostLease(lost)
}

// Release implements [dedupe.Store].
func (t *TxStore) Release(ctx context.Context, leases ...dedupe.Lease) error {
	if err := t.keys.Release(ctx, t.tx, leases); err != nil {
		return fail(ctx, "release", err)
	}
	return nil
}

// Sweep implements [dedupe.Store]; all of it is part of the caller's
// transaction.
func (t *TxStore) Sweep(ctx context.Context) (int, error) {
	now := t.keys.Now().UnixNano()
	removed := 0
	for {
		n, err := sqlitedb.SweepKeys(ctx, t.tx, now)
		if err != nil {
			return removed, fail(ctx, "sweep", err)
		}
		removed += int(n)
		if n < sqlitedb.SweepLimit {
			return removed, nil
		}
	}
}
