package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/hookgate/hookgate/dedupe"
)

// schema creates the table and the index Sweep walks. Times are Unix
// nanoseconds; a key is claimable again once the clock reaches expires.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS dedupe_keys (
		hash       BLOB    NOT NULL PRIMARY KEY CHECK (length(hash) = 16),
		token      INTEGER NOT NULL,
		committed  INTEGER NOT NULL CHECK (committed IN (0, 1)),
		first_seen INTEGER NOT NULL,
		expires    INTEGER NOT NULL
	) WITHOUT ROWID, STRICT`,
	`CREATE INDEX IF NOT EXISTS dedupe_keys_expires ON dedupe_keys (expires)`,
}

const (
	// batchLimit is how many keys one statement handles; larger batches
	// take several statements in the same transaction. It keeps the bound
	// parameters (four per key) far below SQLite's limit.
	batchLimit = 256
	// sweepLimit is how many expired keys one sweep statement deletes.
	sweepLimit = 1000
)

// migrate creates the schema if it is absent, in one transaction so that
// processes opening a new file at once do not trip over each other.
func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, stmt := range schema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// held is a key that someone holds: its row, for a claim to answer from.
type held struct {
	token     int64
	committed bool
	firstSeen int64
	expires   int64
}

// claim claims hashes in tx. It reads which keys are held, decides each
// hash's status in input order, and writes the new leases, a chunk of keys
// per statement. tx must hold the write lock or take it on its first write;
// SQLite's serializable transactions make the read and the write atomic.
func (s *Store) claim(ctx context.Context, tx *sql.Tx, lease time.Duration, hashes []dedupe.Hash) ([]dedupe.Result, error) {
	now := s.now().UnixNano()
	end := after(now, lease)
	rs := make([]dedupe.Result, len(hashes))
	for lo := 0; lo < len(hashes); lo += batchLimit {
		chunk := hashes[lo:min(lo+batchLimit, len(hashes))]
		keys, err := readHeld(ctx, tx, now, chunk)
		if err != nil {
			return nil, err
		}
		var fresh []any
		for i, h := range chunk {
			r := &rs[lo+i]
			if k, ok := keys[h]; ok {
				r.Status = dedupe.InFlight
				if k.committed {
					r.Status = dedupe.Duplicate
				}
				r.FirstSeen, r.Expires = unix(k.firstSeen), unix(k.expires)
				continue
			}
			tok := newToken()
			keys[h] = held{token: int64(tok), firstSeen: now, expires: end}
			*r = dedupe.Result{Status: dedupe.New, Lease: dedupe.Lease{Hash: h, Token: tok}, FirstSeen: unix(now), Expires: unix(end)}
			fresh = append(fresh, h[:], int64(tok), now, end)
		}
		if len(fresh) == 0 {
			continue
		}
		// Expired rows of the same hashes are replaced.
		q := "INSERT INTO dedupe_keys (hash, token, committed, first_seen, expires) VALUES " +
			rows("(?, ?, 0, ?, ?)", len(fresh)/4) +
			" ON CONFLICT (hash) DO UPDATE SET token = excluded.token, committed = 0," +
			" first_seen = excluded.first_seen, expires = excluded.expires"
		if _, err := tx.ExecContext(ctx, q, fresh...); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// readHeld returns the unexpired rows among hashes.
func readHeld(ctx context.Context, tx *sql.Tx, now int64, hashes []dedupe.Hash) (map[dedupe.Hash]held, error) {
	args := make([]any, 0, len(hashes)+1)
	args = append(args, now)
	for _, h := range hashes {
		args = append(args, h[:])
	}
	q := "SELECT hash, token, committed, first_seen, expires FROM dedupe_keys WHERE expires > ? AND hash IN (" +
		strings.TrimSuffix(strings.Repeat("?, ", len(hashes)), ", ") + ")"
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	keys := make(map[dedupe.Hash]held, len(hashes))
	for rows.Next() {
		var (
			raw []byte
			k   held
		)
		if err := rows.Scan(&raw, &k.token, &k.committed, &k.firstSeen, &k.expires); err != nil {
			return nil, err
		}
		h, err := toHash(raw)
		if err != nil {
			return nil, err
		}
		keys[h] = k
	}
	return keys, rows.Err()
}

// commit commits leases in tx. lost reports the first lease that no longer
// holds its key; err is a database failure.
func (s *Store) commit(ctx context.Context, tx *sql.Tx, window time.Duration, leases []dedupe.Lease) (lost, err error) {
	end := after(s.now().UnixNano(), window)
	for lo := 0; lo < len(leases); lo += batchLimit {
		chunk := leases[lo:min(lo+batchLimit, len(leases))]
		args := append(make([]any, 0, 1+2*len(chunk)), end)
		args = appendLeases(args, chunk)
		// A committed key keeps its window but still counts as held.
		q := "UPDATE dedupe_keys SET expires = CASE committed WHEN 1 THEN expires ELSE ? END, committed = 1" +
			" WHERE (hash, token) IN (VALUES " + rows("(?, ?)", len(chunk)) + ") RETURNING hash, token"
		got, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		ok := make(map[dedupe.Lease]bool, len(chunk))
		for got.Next() {
			var (
				raw []byte
				tok int64
			)
			if err := got.Scan(&raw, &tok); err != nil {
				got.Close()
				return nil, err
			}
			h, err := toHash(raw)
			if err != nil {
				got.Close()
				return nil, err
			}
			ok[dedupe.Lease{Hash: h, Token: dedupe.Token(tok)}] = true
		}
		if err := got.Close(); err != nil {
			return nil, err
		}
		if err := got.Err(); err != nil {
			return nil, err
		}
		for _, l := range chunk {
			if !ok[l] && lost == nil {
				lost = fmt.Errorf("dedupe/sqlite: commit %s: %w", l.Hash, dedupe.ErrLeaseLost)
			}
		}
	}
	return lost, nil
}

// release deletes the uncommitted claims leases still hold.
func (s *Store) release(ctx context.Context, tx *sql.Tx, leases []dedupe.Lease) error {
	for lo := 0; lo < len(leases); lo += batchLimit {
		chunk := leases[lo:min(lo+batchLimit, len(leases))]
		q := "DELETE FROM dedupe_keys WHERE committed = 0 AND (hash, token) IN (VALUES " + rows("(?, ?)", len(chunk)) + ")"
		if _, err := tx.ExecContext(ctx, q, appendLeases(nil, chunk)...); err != nil {
			return err
		}
	}
	return nil
}

// sweepChunk deletes up to sweepLimit keys that expired by now.
func sweepChunk(ctx context.Context, tx *sql.Tx, now int64) (int64, error) {
	res, err := tx.ExecContext(ctx, "DELETE FROM dedupe_keys WHERE hash IN"+
		" (SELECT hash FROM dedupe_keys WHERE expires <= ? LIMIT ?)", now, sweepLimit)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// rows returns n copies of the row placeholder tuple, comma-separated.
func rows(tuple string, n int) string {
	var b strings.Builder
	b.Grow(n * (len(tuple) + 2))
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tuple)
	}
	return b.String()
}

// appendLeases appends each lease's hash and token as statement arguments.
func appendLeases(args []any, leases []dedupe.Lease) []any {
	for _, l := range leases {
		args = append(args, l.Hash[:], int64(l.Token))
	}
	return args
}

// newToken returns a random non-zero token. Tokens are random rather than
// counted so that claims from processes sharing one file never collide.
func newToken() dedupe.Token {
	for {
		if t := rand.Uint64(); t != 0 {
			return dedupe.Token(t)
		}
	}
}

func toHash(raw []byte) (dedupe.Hash, error) {
	var h dedupe.Hash
	if len(raw) != len(h) {
		return h, fmt.Errorf("dedupe_keys holds a %d-byte hash, want %d", len(raw), len(h))
	}
	copy(h[:], raw)
	return h, nil
}

// after returns now+d in Unix nanoseconds, saturating instead of wrapping
// for windows that reach past the year 2262.
func after(now int64, d time.Duration) int64 {
	if d > 0 && now > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return now + int64(d)
}

func unix(ns int64) time.Time {
	return time.Unix(0, ns).UTC()
}
