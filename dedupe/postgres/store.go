package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookgate/hookgate/dedupe"
)

// Options configures a [Store]. The zero value is ready to use.
type Options struct {
	// Now returns the current time; nil means the database's clock (now()),
	// which every node shares, so clock skew between nodes cannot shorten a
	// lease or a window. Tests pass a manual clock to exercise expiry
	// without waiting.
	Now func() time.Time
}

// Store is a [dedupe.Store] kept in the dedupe_keys table of a PostgreSQL
// database. It is safe for concurrent use by many goroutines and by many
// processes and nodes on the same database.
type Store struct {
	pool     *pgxpool.Pool
	ownsPool bool
	now      func() time.Time
}

var _ dedupe.Store = (*Store)(nil)

// New returns a store that keeps its keys in the database pool connects
// to. It creates the dedupe_keys table and its index if they are absent,
// under an advisory lock, so nodes that start at once on a new database
// do not trip over each other. Failures to reach the database wrap
// [dedupe.ErrUnavailable].
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	s := &Store{pool: pool, now: opts.Now}
	if err := migrate(ctx, pool); err != nil {
		return nil, fail(ctx, "create table", err)
	}
	return s, nil
}

// Open connects to the database at url (a postgres:// URL or a key=value
// connection string, as pgxpool.ParseConfig reads it) and returns a store
// on it; [Store.Close] closes the connections.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("dedupe/postgres: open: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fail(ctx, "open", err)
	}
	s, err := New(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownsPool = true
	return s, nil
}

// Close closes the connections if the store was made by [Open]; a store
// made by [New] leaves its pool to the caller.
func (s *Store) Close() {
	if s.ownsPool {
		s.pool.Close()
	}
}

// Claim implements [dedupe.Store] in one statement for the whole batch,
// run again only for keys whose holder changed while it ran. A hash
// repeated within one call sees the claim its first occurrence took.
func (s *Store) Claim(ctx context.Context, lease time.Duration, hashes ...dedupe.Hash) ([]dedupe.Result, error) {
	if len(hashes) == 0 {
		return []dedupe.Result{}, nil
	}
	// first maps each distinct hash to the index of its first occurrence:
	// one statement may not upsert a row twice.
	first := make(map[dedupe.Hash]int, len(hashes))
	for i, h := range hashes {
		if _, seen := first[h]; !seen {
			first[h] = i
		}
	}
	pending := make([]dedupe.Hash, 0, len(first))
	for h := range first {
		pending = append(pending, h)
	}
	rs := make([]dedupe.Result, len(hashes))
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == claimAttempts {
			return nil, fmt.Errorf("dedupe/postgres: claim: %w: %d keys changed hands in each of %d attempts",
				dedupe.ErrUnavailable, len(pending), claimAttempts)
		}
		rows, err := s.claim(ctx, lease, pending)
		if err != nil {
			return nil, fail(ctx, "claim", err)
		}
		for _, row := range rows {
			r := &rs[first[row.hash]]
			r.Status = dedupe.InFlight
			switch {
			case row.won:
				r.Status, r.Lease = dedupe.New, dedupe.Lease{Hash: row.hash, Token: dedupe.Token(row.token)}
			case row.committed:
				r.Status = dedupe.Duplicate
			}
			r.FirstSeen, r.Expires = row.firstSeen.UTC(), row.expires.UTC()
		}
		// A key the statement neither took nor saw held changed hands
		// after the statement's snapshot; the next statement sees how.
		pending = slices.DeleteFunc(pending, func(h dedupe.Hash) bool { return rs[first[h]].Status != 0 })
	}
	for i, h := range hashes {
		if j := first[h]; j != i {
			r := rs[j]
			if r.Status == dedupe.New {
				r.Status, r.Lease = dedupe.InFlight, dedupe.Lease{}
			}
			rs[i] = r
		}
	}
	return rs, nil
}

// claimRow is one row the claim statement returns.
type claimRow struct {
	hash      dedupe.Hash
	token     int64
	committed bool
	firstSeen time.Time
	expires   time.Time
	won       bool
}

// claim runs the claim statement once for distinct hashes with fresh
// tokens.
func (s *Store) claim(ctx context.Context, lease time.Duration, hashes []dedupe.Hash) ([]claimRow, error) {
	keys := make([][]byte, len(hashes))
	tokens := make([]int64, len(hashes))
	for i := range hashes {
		keys[i] = hashes[i][:]
		tokens[i] = int64(dedupe.NewToken())
	}
	rows, err := s.pool.Query(ctx, claimSQL, keys, tokens, s.at(), lease)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (claimRow, error) {
		var (
			r   claimRow
			raw []byte
		)
		if err := row.Scan(&raw, &r.token, &r.committed, &r.firstSeen, &r.expires, &r.won); err != nil {
			return r, err
		}
		var err error
		r.hash, err = dedupe.HashFromBytes(raw)
		return r, err
	})
}

// Commit implements [dedupe.Store] in one statement. Committing a lease
// again leaves the window its first commit set.
func (s *Store) Commit(ctx context.Context, window time.Duration, leases ...dedupe.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	keys, tokens := leaseArgs(leases)
	rows, err := s.pool.Query(ctx, commitSQL, keys, tokens, s.at(), window)
	if err != nil {
		return fail(ctx, "commit", err)
	}
	holding := make(map[dedupe.Lease]bool, len(leases))
	var (
		raw []byte
		tok int64
	)
	_, err = pgx.ForEachRow(rows, []any{&raw, &tok}, func() error {
		h, err := dedupe.HashFromBytes(raw)
		holding[dedupe.Lease{Hash: h, Token: dedupe.Token(tok)}] = true
		return err
	})
	if err != nil {
		return fail(ctx, "commit", err)
	}
	for _, l := range leases {
		if !holding[l] {
			return fmt.Errorf("dedupe/postgres: commit %s: %w", l.Hash, dedupe.ErrLeaseLost)
		}
	}
	return nil
}

// Release implements [dedupe.Store] in one statement. It drops only
// uncommitted claims: a lease that was committed keeps answering Duplicate
// until its window ends.
func (s *Store) Release(ctx context.Context, leases ...dedupe.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	keys, tokens := leaseArgs(leases)
	if _, err := s.pool.Exec(ctx, releaseSQL, keys, tokens); err != nil {
		return fail(ctx, "release", err)
	}
	return nil
}

// Sweep implements [dedupe.Store]. It deletes in statements of at most
// sweepLimit keys, so no statement holds many row locks for long, and
// skips keys a claim is taking over at that moment. If a statement fails,
// it returns what the earlier ones removed with the error.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	at := s.at()
	removed := 0
	for {
		tag, err := s.pool.Exec(ctx, sweepSQL, at, sweepLimit)
		if err != nil {
			return removed, fail(ctx, "sweep", err)
		}
		n := int(tag.RowsAffected())
		removed += n
		if n < sweepLimit {
			return removed, nil
		}
	}
}

// at is the time the statements take for now: nil, so that they read the
// database's clock, unless Options.Now was given.
func (s *Store) at() *time.Time {
	if s.now == nil {
		return nil
	}
	t := s.now()
	return &t
}

// fail wraps an error from the database. When ctx has ended, the error is
// the caller's doing, not the store's, and wraps ctx.Err(); otherwise it
// wraps [dedupe.ErrUnavailable].
func fail(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return fmt.Errorf("dedupe/postgres: %s: %w", op, err)
		}
		return fmt.Errorf("dedupe/postgres: %s: %w (%v)", op, cerr, err)
	}
	return fmt.Errorf("dedupe/postgres: %s: %w: %w", op, dedupe.ErrUnavailable, err)
}

// leaseArgs returns the hashes and tokens of leases as statement arguments.
func leaseArgs(leases []dedupe.Lease) ([][]byte, []int64) {
	keys := make([][]byte, len(leases))
	tokens := make([]int64, len(leases))
	for i := range leases {
		keys[i] = leases[i].Hash[:]
		tokens[i] = int64(leases[i].Token)
	}
	return keys, tokens
}
