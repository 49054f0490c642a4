package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// schemaLock is the advisory lock key taken while the schema is created;
// any fixed number that other users of the database are unlikely to take.
// It reads "hgdedupe" in ASCII.
const schemaLock int64 = 0x6867646564757065

// schema creates the table and the index Sweep walks. A key is claimable
// again once the clock reaches expires.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS dedupe_keys (
		hash       bytea       NOT NULL PRIMARY KEY CHECK (length(hash) = 16),
		token      bigint      NOT NULL,
		committed  boolean     NOT NULL,
		first_seen timestamptz NOT NULL,
		expires    timestamptz NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS dedupe_keys_expires ON dedupe_keys (expires)`,
}

const (
	// claimAttempts bounds how often Claim runs its statement again for
	// keys that changed hands while the previous one ran. Each run waits
	// for the transactions it raced, so a second run nearly always settles
	// every key.
	claimAttempts = 10
	// sweepLimit is how many expired keys one sweep statement deletes, so
	// that a claim of an expired key waits behind a short statement.
	sweepLimit = 1000
)

// claimSQL takes, for each hash in $1 with the token at the same place in
// $2, the key if it is absent or expired, with a lease of $4, and returns
// the taken keys (won) and, from the statement's snapshot, the live keys
// it could not take. Keys are inserted in hash order, so two claims
// waiting on each other's keys cannot deadlock. The insert sees the newest
// version of a key, waiting for a concurrent writer if need be; the read
// sees the snapshot, which may be older. So a key the insert took is not
// read again (the snapshot may show it live under the lease it replaced),
// and a key a concurrent claim inserted or took over after the snapshot is
// in neither part: the caller runs those keys again.
const claimSQL = `WITH input AS (
	SELECT hash, token FROM unnest($1::bytea[], $2::bigint[]) AS t (hash, token)
), clock AS (
	SELECT coalesce($3::timestamptz, now()) AS now
), taken AS (
	INSERT INTO dedupe_keys AS k (hash, token, committed, first_seen, expires)
	SELECT i.hash, i.token, false, c.now, c.now + $4::interval
	FROM input i CROSS JOIN clock c
	ORDER BY i.hash
	ON CONFLICT (hash) DO UPDATE
	SET token = excluded.token, committed = false, first_seen = excluded.first_seen, expires = excluded.expires
	WHERE k.expires <= excluded.first_seen
	RETURNING k.hash, k.token, k.committed, k.first_seen, k.expires
)
SELECT hash, token, committed, first_seen, expires, true FROM taken
UNION ALL
SELECT k.hash, k.token, k.committed, k.first_seen, k.expires, false
FROM dedupe_keys k JOIN input i ON i.hash = k.hash CROSS JOIN clock c
WHERE k.expires > c.now AND NOT EXISTS (SELECT FROM taken t WHERE t.hash = k.hash)`

// commitSQL marks the keys that the leases ($1, $2) still hold committed
// until $3 + $4 and returns those leases. A key committed before keeps its
// window. It locks the keys in hash order first, as claims do.
const commitSQL = `WITH held AS MATERIALIZED (
	SELECT k.hash FROM dedupe_keys k
	WHERE (k.hash, k.token) IN (SELECT * FROM unnest($1::bytea[], $2::bigint[]))
	ORDER BY k.hash
	FOR UPDATE
)
UPDATE dedupe_keys k
SET expires = CASE WHEN k.committed THEN k.expires ELSE coalesce($3::timestamptz, now()) + $4::interval END,
	committed = true
FROM held h
WHERE k.hash = h.hash
RETURNING k.hash, k.token`

// releaseSQL deletes the uncommitted keys that the leases ($1, $2) still
// hold, locking them in hash order first, as claims do.
const releaseSQL = `WITH held AS MATERIALIZED (
	SELECT k.hash FROM dedupe_keys k
	WHERE (k.hash, k.token) IN (SELECT * FROM unnest($1::bytea[], $2::bigint[])) AND NOT k.committed
	ORDER BY k.hash
	FOR UPDATE
)
DELETE FROM dedupe_keys k USING held h WHERE k.hash = h.hash`

// sweepSQL deletes up to $2 keys that expired by $1. It skips keys that
// another statement has locked rather than wait: those are being claimed,
// committed or released, and so are not for the sweep to remove. The keys
// go to the delete as an array so that it finds each by the primary key: as
// a join, the generic plan that prepared statements get after a few runs
// scans the whole table.
const sweepSQL = `DELETE FROM dedupe_keys WHERE hash = ANY (ARRAY(
	SELECT hash FROM dedupe_keys
	WHERE expires <= coalesce($1::timestamptz, now())
	LIMIT $2
	FOR UPDATE SKIP LOCKED
))`

// migrate creates the schema if it is absent. Concurrent CREATE TABLE IF
// NOT EXISTS statements can still fail on the catalog's unique indexes, so
// the transaction first takes an advisory lock that other nodes starting
// at the same moment wait on.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schemaLock); err != nil {
			return err
		}
		for _, stmt := range schema {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
}
