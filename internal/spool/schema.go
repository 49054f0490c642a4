package spool

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/gob"
	"fmt"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

// steps are the spool's schema versions.
var steps = []sqlitedb.Step{
	sqlitedb.Exec("spool", `
CREATE TABLE spool (
	seq        INTEGER PRIMARY KEY,
	hash       BLOB    NOT NULL UNIQUE,
	item       BLOB    NOT NULL,
	spooled_at INTEGER NOT NULL,
	expires    INTEGER NOT NULL,
	drained_at INTEGER,
	outcome    TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX spool_waiting ON spool (seq) WHERE drained_at IS NULL;
CREATE INDEX spool_expires ON spool (expires) WHERE drained_at IS NOT NULL;`),
	{Name: "requests, digests, offers and quarantine", Up: requestsStep},
}

// requestsStep gives each row the request it came in (request: the seq of
// the request's first row), so that a drain hands a request's events to
// the inbox together; marks a row while an offer of it to the inbox may
// have stored it (offered), so that a row the inbox took at an offer
// whose outcome was not recorded is not counted a duplicate; keeps a row
// that cannot be decoded aside (quarantine: why); and keeps the replay
// guard's digests of the requests spooled (spool_digests), so that a
// replay during the outage is a duplicate as it would be in the database.
//
// Rows spooled before this step carry their digest only inside their
// encoded item, and one Put wrote the rows of several requests with one
// spooled_at: the rows of one Put that share a digest are one request's
// (a Put holds at most one request per digest), any other row is a
// request of its own. A row that does not decode is left a request of its
// own, for the drain to quarantine.
func requestsStep(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE spool ADD COLUMN request INTEGER NOT NULL DEFAULT 0;
ALTER TABLE spool ADD COLUMN offered INTEGER NOT NULL DEFAULT 0;
ALTER TABLE spool ADD COLUMN quarantine TEXT;
UPDATE spool SET request = seq;
DROP INDEX spool_waiting;
CREATE INDEX spool_waiting ON spool (request, seq) WHERE drained_at IS NULL AND quarantine IS NULL;
CREATE TABLE spool_digests (
	digest     BLOB    NOT NULL PRIMARY KEY,
	first_seen INTEGER NOT NULL,
	expires    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX spool_digests_expires ON spool_digests (expires);`)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, item, spooled_at, expires FROM spool ORDER BY seq`)
	if err != nil {
		return err
	}
	type key struct {
		spooledAt int64
		digest    dedupe.Hash
	}
	first := map[key]int64{}     // the request's first row
	grouped := map[int64]int64{} // seq -> its request, for rows not their own
	digests := map[dedupe.Hash][2]int64{}
	for rows.Next() {
		var (
			seq, at, expires int64
			raw              []byte
			it               inbox.Item
		)
		if err := rows.Scan(&seq, &raw, &at, &expires); err != nil {
			rows.Close()
			return err
		}
		if gob.NewDecoder(bytes.NewReader(raw)).Decode(&it) != nil || it.Digest == (dedupe.Hash{}) {
			continue
		}
		k := key{at, it.Digest}
		if req, ok := first[k]; ok {
			grouped[seq] = req
		} else {
			first[k] = seq
		}
		if d, ok := digests[it.Digest]; !ok || expires > d[1] {
			digests[it.Digest] = [2]int64{at, expires}
		}
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for seq, req := range grouped {
		if _, err := tx.ExecContext(ctx, `UPDATE spool SET request = ? WHERE seq = ?`, req, seq); err != nil {
			return fmt.Errorf("row %d: %w", seq, err)
		}
	}
	for d, times := range digests {
		if _, err := tx.ExecContext(ctx, `INSERT INTO spool_digests (digest, first_seen, expires) VALUES (?, ?, ?)`,
			d[:], times[0], times[1]); err != nil {
			return err
		}
	}
	return nil
}
