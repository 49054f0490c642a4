package sqlitedb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hookgate/hookgate/dedupe"
)

// KeySteps are the migrations of the dedupe_keys table. The first creates
// the table and the index the sweep walks; IF NOT EXISTS, because files
// written before versioned migrations have both already. Times are Unix
// nanoseconds; a key is claimable again once the clock reaches expires.
var KeySteps = []Step{
	Exec("create dedupe_keys", `CREATE TABLE IF NOT EXISTS dedupe_keys (
		hash       BLOB    NOT NULL PRIMARY KEY CHECK (length(hash) = 16),
		token      INTEGER NOT NULL,
		committed  INTEGER NOT NULL CHECK (committed IN (0, 1)),
		first_seen INTEGER NOT NULL,
		expires    INTEGER NOT NULL
	) WITHOUT ROWID, STRICT;
	CREATE INDEX IF NOT EXISTS dedupe_keys_expires ON dedupe_keys (expires)`),
}

// KeyTable is the name under which schema_versions records the dedupe_keys
// migrations.
const KeyTable = "dedupe_keys"

const (
	// batchLimit is how many keys Claim handles in one pass (hashes repeated
	// within a pass are told apart); larger batches take several.
	batchLimit = MaxRows
	// SweepLimit is how many expired keys one sweep statement deletes.
	SweepLimit = 1000
)

// Keys claims, commits and releases dedupe keys in the dedupe_keys table
// inside a caller's write transaction, with statements prepared once on
// its database.
type Keys struct {
	db    *DB
	clock func() time.Time
}

// Keys returns the dedupe keys of d, with now as the clock of leases and
// windows.
func (d *DB) Keys(now func() time.Time) Keys {
	return Keys{db: d, clock: now}
}

// Now is the time of the keys' clock.
func (k Keys) Now() time.Time { return k.clock() }

// held is the row of a key that someone else holds.
type held struct {
	token     int64
	committed bool
	firstSeen int64
	expires   int64
}

// Claim claims hashes in tx, a chunk of keys per statement. For each chunk,
// one upsert takes every key that is absent or expired and returns the
// ones it took; the statement decides and writes each row at once, so no
// other claimer can come between. Only when some key was held already does
// a second statement read who holds it.
//
// With committed set, the keys it takes are written committed until
// now+lease (the window) instead of leased: for a caller that makes the
// event durable in the same transaction, and a repeated hash then sees a
// Duplicate.
func (k Keys) Claim(ctx context.Context, tx *sql.Tx, lease time.Duration, committed bool, hashes []dedupe.Hash) ([]dedupe.Result, error) {
	now := k.Now().UnixNano()
	end := After(now, lease)
	rs := make([]dedupe.Result, len(hashes))
	for lo := 0; lo < len(hashes); lo += batchLimit {
		chunk := hashes[lo:min(lo+batchLimit, len(hashes))]
		// first maps each distinct hash to the index of its first occurrence.
		first := make(map[dedupe.Hash]int, len(chunk))
		args := make([]any, 0, 4*len(chunk))
		for i, h := range chunk {
			if _, seen := first[h]; seen {
				continue
			}
			first[h] = i
			tok := dedupe.NewToken()
			rs[lo+i].Lease = dedupe.Lease{Hash: h, Token: tok}
			args = append(args, h[:], int64(tok), now, end)
		}
		won, err := k.upsertClaims(ctx, tx, args, committed)
		if err != nil {
			return nil, err
		}
		var taken []dedupe.Hash
		for h, i := range first {
			r := &rs[lo+i]
			if won[h] == r.Lease.Token {
				r.Status, r.FirstSeen, r.Expires = dedupe.New, unix(now), unix(end)
				continue
			}
			r.Lease = dedupe.Lease{}
			taken = append(taken, h)
		}
		if len(taken) > 0 {
			keys, err := k.readHeld(ctx, tx, taken)
			if err != nil {
				return nil, err
			}
			for _, h := range taken {
				kept, ok := keys[h]
				if !ok {
					return nil, fmt.Errorf("key %s neither claimed nor held", h)
				}
				r := &rs[lo+first[h]]
				r.Status = dedupe.InFlight
				if kept.committed {
					r.Status = dedupe.Duplicate
				}
				r.FirstSeen, r.Expires = unix(kept.firstSeen), unix(kept.expires)
			}
		}
		// A repeated hash sees the claim its first occurrence took.
		for i, h := range chunk {
			if j := first[h]; j != i {
				r := rs[lo+j]
				if r.Status == dedupe.New {
					r.Status, r.Lease = dedupe.InFlight, dedupe.Lease{}
					if committed {
						r.Status = dedupe.Duplicate
					}
				}
				rs[lo+i] = r
			}
		}
	}
	return rs, nil
}

// upsertClaims writes the leases in args (hash, token, first seen,
// expires) on the keys that are absent or expired, and returns the token
// each written key now holds. Placeholders are anonymous: the driver looks
// up the name of every numbered one as it binds, in time that grows with
// their count.
func (k Keys) upsertClaims(ctx context.Context, tx *sql.Tx, args []any, committed bool) (map[dedupe.Hash]dedupe.Token, error) {
	tuple := "(?, ?, 0, ?, ?)"
	if committed {
		tuple = "(?, ?, 1, ?, ?)"
	}
	won := make(map[dedupe.Hash]dedupe.Token, len(args)/4)
	for _, n := range Sizes(len(args) / 4) {
		q := "INSERT INTO dedupe_keys (hash, token, committed, first_seen, expires) VALUES " +
			Rows(tuple, n) +
			" ON CONFLICT (hash) DO UPDATE SET token = excluded.token, committed = excluded.committed," +
			" first_seen = excluded.first_seen, expires = excluded.expires" +
			" WHERE dedupe_keys.expires <= excluded.first_seen RETURNING hash, token"
		if err := k.queryLeases(ctx, tx, q, args[:4*n], func(l dedupe.Lease) { won[l.Hash] = l.Token }); err != nil {
			return nil, err
		}
		args = args[4*n:]
	}
	return won, nil
}

// queryLeases runs q, which returns (hash, token) rows, and hands each row
// to add.
func (k Keys) queryLeases(ctx context.Context, tx *sql.Tx, q string, args []any, add func(dedupe.Lease)) error {
	return k.db.EachRow(ctx, tx, q, args, func(rows *sql.Rows) error {
		var (
			raw []byte
			tok int64
		)
		if err := rows.Scan(&raw, &tok); err != nil {
			return err
		}
		h, err := dedupe.HashFromBytes(raw)
		if err != nil {
			return err
		}
		add(dedupe.Lease{Hash: h, Token: dedupe.Token(tok)})
		return nil
	})
}

// readHeld returns the rows of hashes.
func (k Keys) readHeld(ctx context.Context, tx *sql.Tx, hashes []dedupe.Hash) (map[dedupe.Hash]held, error) {
	keys := make(map[dedupe.Hash]held, len(hashes))
	for _, n := range Sizes(len(hashes)) {
		if err := k.readHeldRows(ctx, tx, hashes[:n], keys); err != nil {
			return nil, err
		}
		hashes = hashes[n:]
	}
	return keys, nil
}

// readHeldRows reads the rows of hashes into keys in one statement.
func (k Keys) readHeldRows(ctx context.Context, tx *sql.Tx, hashes []dedupe.Hash, keys map[dedupe.Hash]held) error {
	args := make([]any, 0, len(hashes))
	for _, h := range hashes {
		args = append(args, h[:])
	}
	q := "SELECT hash, token, committed, first_seen, expires FROM dedupe_keys WHERE hash IN (" + Rows("?", len(hashes)) + ")"
	return k.db.EachRow(ctx, tx, q, args, func(rows *sql.Rows) error {
		var (
			raw []byte
			r   held
		)
		if err := rows.Scan(&raw, &r.token, &r.committed, &r.firstSeen, &r.expires); err != nil {
			return err
		}
		h, err := dedupe.HashFromBytes(raw)
		if err != nil {
			return err
		}
		keys[h] = r
		return nil
	})
}

// Commit commits leases in tx. lost reports the first lease that no longer
// holds its key; err is a database failure. A key committed before keeps
// its window.
func (k Keys) Commit(ctx context.Context, tx *sql.Tx, window time.Duration, leases []dedupe.Lease) (lost, err error) {
	end := After(k.Now().UnixNano(), window)
	holding := make(map[dedupe.Lease]bool, len(leases))
	rest := leases
	for _, n := range Sizes(len(leases)) {
		q := "UPDATE dedupe_keys SET expires = CASE committed WHEN 1 THEN expires ELSE ? END, committed = 1" +
			" WHERE (hash, token) IN (VALUES " + Rows("(?, ?)", n) + ") RETURNING hash, token"
		err := k.queryLeases(ctx, tx, q, appendLeases([]any{end}, rest[:n]), func(l dedupe.Lease) { holding[l] = true })
		if err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	for _, l := range leases {
		if !holding[l] {
			return fmt.Errorf("commit %s: %w", l.Hash, dedupe.ErrLeaseLost), nil
		}
	}
	return nil, nil
}

// Release deletes the uncommitted claims leases still hold.
func (k Keys) Release(ctx context.Context, tx *sql.Tx, leases []dedupe.Lease) error {
	for _, n := range Sizes(len(leases)) {
		st, err := k.db.Stmt(ctx, tx, "DELETE FROM dedupe_keys WHERE committed = 0 AND (hash, token) IN (VALUES "+Rows("(?, ?)", n)+")")
		if err != nil {
			return err
		}
		_, err = st.ExecContext(ctx, appendLeases(nil, leases[:n])...)
		st.Close()
		if err != nil {
			return err
		}
		leases = leases[n:]
	}
	return nil
}

// Sweep deletes the keys that expired by the keys' clock, in write
// transactions of at most SweepLimit keys each ([DB.Sweep]), so that
// other writers wait behind one short chunk, not the whole sweep. If a
// chunk fails, it returns what the committed chunks removed with the
// error.
func (k Keys) Sweep(ctx context.Context) (int, error) {
	now := k.Now().UnixNano()
	return k.db.Sweep(ctx, SweepLimit, func(tx *sql.Tx, limit int) (int, error) {
		n, err := sweepKeys(ctx, tx, now, limit)
		return int(n), err
	})
}

// SweepKeys deletes up to SweepLimit keys that expired by now.
func SweepKeys(ctx context.Context, tx *sql.Tx, now int64) (int64, error) {
	return sweepKeys(ctx, tx, now, SweepLimit)
}

// sweepKeys deletes up to limit keys that expired by now.
func sweepKeys(ctx context.Context, tx *sql.Tx, now int64, limit int) (int64, error) {
	res, err := tx.ExecContext(ctx, "DELETE FROM dedupe_keys WHERE hash IN"+
		" (SELECT hash FROM dedupe_keys WHERE expires <= ? LIMIT ?)", now, limit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// appendLeases appends each lease's hash and token as statement arguments.
func appendLeases(args []any, leases []dedupe.Lease) []any {
	for _, l := range leases {
		args = append(args, l.Hash[:], int64(l.Token))
	}
	return args
}

// unix is the time of a Unix nanoseconds column.
func unix(ns int64) time.Time {
	return time.Unix(0, ns).UTC()
}
