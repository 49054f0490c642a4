package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hookgate/hookgate/dedupe"
)

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
	db     *sql.DB
	ownsDB bool
	now    func() time.Time
	// writer admits one write transaction at a time (see Lock).
	writer chan struct{}
}

var _ dedupe.Store = (*Store)(nil)

// New returns a store that keeps its keys in db, which should come from
// [OpenDB]. It creates the dedupe_keys table and its index if they are
// absent, so calling it on a database that already has them is safe.
func New(db *sql.DB, opts Options) (*Store, error) {
	s := &Store{db: db, now: opts.Now, writer: make(chan struct{}, 1)}
	if s.now == nil {
		s.now = time.Now
	}
	if err := migrate(context.Background(), db); err != nil {
		return nil, fmt.Errorf("dedupe/sqlite: create table: %w: %w", dedupe.ErrUnavailable, err)
	}
	return s, nil
}

// Open opens the database file at path with [OpenDB] and returns a store on
// it; [Store.Close] closes that database.
func Open(path string, opts Options) (*Store, error) {
	db, err := OpenDB(path)
	if err != nil {
		return nil, err
	}
	s, err := New(db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.ownsDB = true
	return s, nil
}

// Close closes the database if the store was made by [Open]; a store made
// by [New] leaves its database to the caller.
func (s *Store) Close() error {
	if !s.ownsDB {
		return nil
	}
	return s.db.Close()
}

// Tx returns the claim protocol bound to the caller's transaction tx, which
// should be a write transaction on the store's database. Claims, commits,
// releases and sweeps made through it become visible to others, and
// durable, only when the caller commits tx, and vanish if it rolls back: the
// gateway claims its keys, inserts its inbox rows and commits the keys in
// one transaction. The returned store must not be used after tx ends. While
// a goroutine holds tx, it must go through Tx: the store's own methods
// would wait for the write lock that tx holds.
func (s *Store) Tx(tx *sql.Tx) *TxStore {
	return &TxStore{s: s, tx: tx}
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
		rs, err = s.claim(ctx, tx, lease, false, hashes)
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
		lost, err = s.commit(ctx, tx, window, leases)
		return err
	})
	if err != nil {
		return err
	}
	return lost
}

// Release implements [dedupe.Store] in one transaction. It drops only
// uncommitted claims: a lease that was committed keeps answering Duplicate
// until its window ends.
func (s *Store) Release(ctx context.Context, leases ...dedupe.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	return s.write(ctx, "release", func(tx *sql.Tx) error {
		return s.release(ctx, tx, leases)
	})
}

// Sweep implements [dedupe.Store]. It deletes in transactions of at most
// sweepChunk keys, so claims wait behind one chunk, not the whole sweep. If
// a chunk fails, it returns what the committed chunks removed with the
// error.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	now := s.now().UnixNano()
	removed := 0
	for {
		var n int64
		err := s.write(ctx, "sweep", func(tx *sql.Tx) error {
			var err error
			n, err = sweepChunk(ctx, tx, now)
			return err
		})
		if err != nil {
			return removed, err
		}
		removed += int(n)
		if n < sweepLimit {
			return removed, nil
		}
	}
}

// Lock takes the store's turn to write, and unlock gives it back. The
// store's own write transactions take it, and so should a caller sharing
// the database: the goroutines of one process then queue here, without
// holding a connection, rather than polling SQLite's lock on the busy
// timeout. Other processes on the same file still queue on the busy
// timeout. A goroutine holding the turn must not call the store's own
// methods; it writes through [Store.Tx].
func (s *Store) Lock(ctx context.Context) (unlock func(), err error) {
	select {
	case s.writer <- struct{}{}:
		return func() { <-s.writer }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// write runs fn in a transaction of its own, which it commits if fn
// succeeds. Errors fn returns from the database are wrapped by fail.
func (s *Store) write(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	unlock, err := s.Lock(ctx)
	if err != nil {
		return fail(ctx, op, err)
	}
	defer unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(ctx, op, err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return fail(ctx, op, err)
	}
	if err := tx.Commit(); err != nil {
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

// TxStore is the claim protocol inside a caller's transaction; see
// [Store.Tx].
type TxStore struct {
	s  *Store
	tx *sql.Tx
}

var _ dedupe.Store = (*TxStore)(nil)

// Claim implements [dedupe.Store].
func (t *TxStore) Claim(ctx context.Context, lease time.Duration, hashes ...dedupe.Hash) ([]dedupe.Result, error) {
	rs, err := t.s.claim(ctx, t.tx, lease, false, hashes)
	if err != nil {
		return nil, fail(ctx, "claim", err)
	}
	return rs, nil
}

// ClaimCommitted claims hashes and commits the ones it takes in the same
// statement, with the given window: the result a Claim, then a Commit of
// every New lease, would give inside this transaction, in one pass over
// the keys. It is for a caller that writes its event in the same
// transaction, where a lease between claim and commit protects nothing: the
// transaction is the lease. New results carry the window's end in Expires;
// a hash repeated within the call is a Duplicate of its first occurrence.
func (t *TxStore) ClaimCommitted(ctx context.Context, window time.Duration, hashes ...dedupe.Hash) ([]dedupe.Result, error) {
	rs, err := t.s.claim(ctx, t.tx, window, true, hashes)
	if err != nil {
		return nil, fail(ctx, "claim", err)
	}
	return rs, nil
}

// Commit implements [dedupe.Store].
func (t *TxStore) Commit(ctx context.Context, window time.Duration, leases ...dedupe.Lease) error {
	lost, err := t.s.commit(ctx, t.tx, window, leases)
	if err != nil {
		return fail(ctx, "commit", err)
	}
	return lost
}

// Release implements [dedupe.Store].
func (t *TxStore) Release(ctx context.Context, leases ...dedupe.Lease) error {
	if err := t.s.release(ctx, t.tx, leases); err != nil {
		return fail(ctx, "release", err)
	}
	return nil
}

// Sweep implements [dedupe.Store]; all of it is part of the caller's
// transaction.
func (t *TxStore) Sweep(ctx context.Context) (int, error) {
	now := t.s.now().UnixNano()
	removed := 0
	for {
		n, err := sweepChunk(ctx, t.tx, now)
		if err != nil {
			return removed, fail(ctx, "sweep", err)
		}
		removed += int(n)
		if n < sweepLimit {
			return removed, nil
		}
	}
}
