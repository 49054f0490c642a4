package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

// guardSchema keeps the replay guard's digests: one row per accepted
// request of a guarded source, until its source's window ends. Times are
// Unix nanoseconds, as in dedupe_keys; the index is what the sweep walks.
const guardSchema = `
CREATE TABLE IF NOT EXISTS replay_digests (
	digest     BLOB    NOT NULL PRIMARY KEY CHECK (length(digest) = 16),
	first_seen INTEGER NOT NULL,
	expires    INTEGER NOT NULL
) WITHOUT ROWID, STRICT;
CREATE INDEX IF NOT EXISTS replay_digests_expires ON replay_digests (expires);
`

// guard keeps the digests of the guarded items in tx and reports, by item
// index, the outcome of each item whose request's digest was kept already:
// a replay, Duplicate as of the digest's first sighting. A digest that is
// absent or expired is written, committed, until now plus its items'
// window; its items go on to have their keys claimed.
func guard(ctx context.Context, db *sqlitedb.DB, tx *sql.Tx, items []inbox.Item, now int64) (map[int]inbox.Outcome, error) {
	byDigest := map[dedupe.Hash][]int{}
	var order []dedupe.Hash
	for i := range items {
		d := items[i].Digest
		if d == (dedupe.Hash{}) {
			continue
		}
		if _, ok := byDigest[d]; !ok {
			order = append(order, d)
		}
		byDigest[d] = append(byDigest[d], i)
	}
	if len(order) == 0 {
		return nil, nil
	}
	replays := map[int]inbox.Outcome{}
	for _, n := range sqlitedb.Sizes(len(order)) {
		chunk := order[:n]
		order = order[n:]
		args := make([]any, 0, 3*len(chunk))
		for _, d := range chunk {
			var window time.Duration
			for _, i := range byDigest[d] {
				window = max(window, items[i].Window)
			}
			args = append(args, d[:], now, sqlitedb.After(now, window))
		}
		kept, err := keepDigests(ctx, db, tx, args, n)
		if err != nil {
			return nil, err
		}
		var held []dedupe.Hash
		for _, d := range chunk {
			if !kept[d] {
				held = append(held, d)
			}
		}
		if len(held) == 0 {
			continue
		}
		seen, err := readDigests(ctx, db, tx, held)
		if err != nil {
			return nil, err
		}
		for _, d := range held {
			o := seen[d]
			for _, i := range byDigest[d] {
				replays[i] = o
			}
		}
	}
	return replays, nil
}

// keepDigests writes the n digests in args (digest, first seen, expires)
// that are absent or expired, and returns the ones it wrote.
func keepDigests(ctx context.Context, db *sqlitedb.DB, tx *sql.Tx, args []any, n int) (map[dedupe.Hash]bool, error) {
	q := `INSERT INTO replay_digests (digest, first_seen, expires) VALUES ` + sqlitedb.Rows("(?, ?, ?)", n) +
		` ON CONFLICT (digest) DO UPDATE SET first_seen = excluded.first_seen, expires = excluded.expires
		WHERE replay_digests.expires <= excluded.first_seen RETURNING digest`
	kept := make(map[dedupe.Hash]bool, n)
	err := db.EachRow(ctx, tx, q, args, func(rows *sql.Rows) error {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return err
		}
		var d dedupe.Hash
		copy(d[:], raw)
		kept[d] = true
		return nil
	})
	return kept, err
}

// readDigests returns the first sighting and expiry of digests, as the
// outcome their replays get.
func readDigests(ctx context.Context, db *sqlitedb.DB, tx *sql.Tx, digests []dedupe.Hash) (map[dedupe.Hash]inbox.Outcome, error) {
	args := make([]any, len(digests))
	for i, d := range digests {
		args[i] = d[:]
	}
	out := make(map[dedupe.Hash]inbox.Outcome, len(digests))
	for _, n := range sqlitedb.Sizes(len(digests)) {
		if err := readDigestRows(ctx, db, tx, args[:n], out); err != nil {
			return nil, err
		}
		args = args[n:]
	}
	return out, nil
}

// readDigestRows reads the digests in args into out in one statement.
func readDigestRows(ctx context.Context, db *sqlitedb.DB, tx *sql.Tx, args []any, out map[dedupe.Hash]inbox.Outcome) error {
	q := `SELECT digest, first_seen, expires FROM replay_digests WHERE digest IN (` + sqlitedb.Rows("?", len(args)) + `)`
	return db.EachRow(ctx, tx, q, args, func(rows *sql.Rows) error {
		var (
			raw            []byte
			first, expires int64
		)
		if err := rows.Scan(&raw, &first, &expires); err != nil {
			return err
		}
		var d dedupe.Hash
		copy(d[:], raw)
		out[d] = inbox.Outcome{Status: dedupe.Duplicate, FirstSeen: fromNanos(first), Expires: fromNanos(expires)}
		return nil
	})
}

// sweepDigests deletes up to limit digests that expired by now.
func sweepDigests(ctx context.Context, tx *sql.Tx, now int64, limit int) (int, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM replay_digests WHERE digest IN
		(SELECT digest FROM replay_digests WHERE expires <= ? LIMIT ?)`, now, limit)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
