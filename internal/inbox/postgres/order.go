package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/internal/inbox"
)

var (
	_ inbox.OrderedDispatcher = (*Store)(nil)
	_ inbox.OrderSkipper      = (*Store)(nil)
)

// schemaV7 keeps per-key order for destinations with order: entity. A
// delivery records its key and its event's version order (ord), and, once
// leased, its position in the key (seq) and the skips before it.
// inbox_deliveries_heads holds the pending deliveries that have a key, in
// the order a key's head is chosen. inbox_order_keys is one row per key
// of a lane: the last position given, the skips not yet reported, the
// event whose failed delivery holds the key (blocked, 0 for none), and
// the key's lease while one of its deliveries is in flight. The key's row
// is what nodes lock and lease, so that one delivery of a key at a time
// is made across nodes. The added columns have constant defaults, so no
// table is rewritten.
const schemaV7 = `
ALTER TABLE inbox_deliveries ADD COLUMN order_key text   NOT NULL DEFAULT '';
ALTER TABLE inbox_deliveries ADD COLUMN ord       bigint NOT NULL DEFAULT 0;
ALTER TABLE inbox_deliveries ADD COLUMN seq       bigint NOT NULL DEFAULT 0;
ALTER TABLE inbox_deliveries ADD COLUMN skipped   integer NOT NULL DEFAULT 0;
CREATE INDEX inbox_deliveries_heads ON inbox_deliveries (source, destination, order_key, ord, event_id)
	WHERE status = 'pending' AND order_key <> '';
CREATE TABLE inbox_order_keys (
	source      text        NOT NULL,
	destination text        NOT NULL,
	key         text        NOT NULL,
	seq         bigint      NOT NULL DEFAULT 0,
	skipped     integer     NOT NULL DEFAULT 0,
	blocked     bigint      NOT NULL DEFAULT 0,
	lease_owner text        NOT NULL DEFAULT '',
	lease_until timestamptz NOT NULL DEFAULT '-infinity',
	leased      bigint      NOT NULL DEFAULT 0,
	PRIMARY KEY (source, destination, key)
);
CREATE INDEX inbox_order_keys_blocked ON inbox_order_keys (source, destination) WHERE blocked > 0;
`

// openKeysQuery gives the keys of new ordered deliveries ($1 events, $2
// destinations, $3 keys) their rows.
const openKeysQuery = `INSERT INTO inbox_order_keys (source, destination, key)
	SELECT DISTINCT e.source, d.destination, d.key
	FROM unnest($1::bigint[], $2::text[], $3::text[]) AS d(id, destination, key) JOIN inbox_events e ON e.id = d.id
	WHERE d.key <> ''
	ORDER BY 1, 2, 3
	ON CONFLICT (source, destination, key) DO NOTHING`

// unblockKeys lifts the blocks that the new deliveries' own events set:
// such an event was replayed, and its delivery is pending again as its
// key's head. It takes up the key's last position, which it had when it
// blocked the key, so that no gap shows where nothing was skipped.
const unblockKeys = `WITH u AS (
	UPDATE inbox_order_keys k SET blocked = 0
	FROM unnest($1::bigint[], $2::text[], $3::text[]) AS d(id, destination, key) JOIN inbox_events e ON e.id = d.id
	WHERE k.source = e.source AND k.destination = d.destination AND k.key = d.key AND k.blocked = d.id
	RETURNING d.id, d.destination, k.seq
)
UPDATE inbox_deliveries x SET seq = u.seq FROM u WHERE x.event_id = u.id AND x.destination = u.destination`

// orderedHeads picks and locks the due heads of a lane's keys: per key
// the pending delivery of the lowest version order, then event id; due
// when its time has come, the key is not leased (none of its deliveries
// is in flight) and not blocked, and nobody holds the lane. The key rows
// are locked with SKIP LOCKED, so two nodes never lease one key's
// deliveries at once; a key row another node leased after this
// statement's snapshot is checked again at its newest version, and is
// passed over when its lease is taken.
const orderedHeads = `WITH clock AS (SELECT coalesce($1::timestamptz, now()) AS now),
heads AS (
	SELECT DISTINCT ON (order_key) event_id, order_key, next_attempt_at
	FROM inbox_deliveries
	WHERE source = $2 AND destination = $3 AND status = 'pending' AND order_key <> ''
	ORDER BY order_key, ord, event_id
)
SELECT h.event_id, k.key FROM heads h JOIN inbox_order_keys k
	ON k.source = $2 AND k.destination = $3 AND k.key = h.order_key, clock
WHERE h.next_attempt_at <= clock.now AND k.lease_until <= clock.now AND k.blocked = 0
  AND NOT EXISTS (SELECT 1 FROM inbox_lanes WHERE source = $2 AND destination = $3 AND held)
ORDER BY h.next_attempt_at, h.event_id LIMIT $4
FOR UPDATE OF k SKIP LOCKED`

// leaseHeads leases the heads locked by orderedHeads ($4 events, $5
// keys) and their keys for $6 until now + $7 µs. A head leased for the
// first time takes its key's next position and the skips since the last.
var leaseHeads = `WITH clock AS (SELECT coalesce($1::timestamptz, now()) AS now),
old AS (
	SELECT x.event_id, x.key, k.seq AS kseq, k.skipped AS kskipped, d.seq AS dseq, d.skipped AS dskipped
	FROM unnest($4::bigint[], $5::text[]) AS x(event_id, key)
	JOIN inbox_order_keys k ON k.source = $2 AND k.destination = $3 AND k.key = x.key
	JOIN inbox_deliveries d ON d.event_id = x.event_id AND d.destination = $3
	WHERE d.status = 'pending'
), keys AS (
	UPDATE inbox_order_keys k SET lease_owner = $6, lease_until = clock.now + $7::bigint * interval '1 microsecond',
		leased = old.event_id,
		seq = CASE WHEN old.dseq = 0 THEN old.kseq + 1 ELSE old.kseq END,
		skipped = CASE WHEN old.dseq = 0 THEN 0 ELSE old.kskipped END
	FROM old, clock WHERE k.source = $2 AND k.destination = $3 AND k.key = old.key
), leased AS (
	UPDATE inbox_deliveries d SET lease_owner = $6, lease_until = clock.now + $7::bigint * interval '1 microsecond',
		seq = CASE WHEN old.dseq = 0 THEN old.kseq + 1 ELSE old.dseq END,
		skipped = CASE WHEN old.dseq = 0 THEN old.kskipped ELSE old.dskipped END
	FROM old, clock WHERE d.event_id = old.event_id AND d.destination = $3
	RETURNING d.event_id, d.destination, d.status, d.attempts, d.next_attempt_at, d.code, d.error, d.at,
		d.order_key, d.seq, d.skipped
)
SELECT ` + eventColumns + `, l.event_id, l.destination, l.status, l.attempts, l.next_attempt_at, l.code, l.error, l.at,
	l.order_key, l.seq, l.skipped
FROM leased l JOIN inbox_events e ON e.id = l.event_id
ORDER BY e.id`

// DispatchOrdered implements inbox.OrderedDispatcher.
func (s *Store) DispatchOrdered(ctx context.Context, owner string, lane inbox.Lane, done []inbox.Done, n int, d time.Duration) (inbox.Dispatched, error) {
	return s.dispatch(ctx, owner, lane, done, n, d, &inbox.RateLimit{Ordered: true})
}

// leaseOrdered leases up to n due heads of lane's keys, then deliveries
// without a key.
func (s *Store) leaseOrdered(ctx context.Context, tx pgx.Tx, owner string, lane inbox.Lane, n int, d time.Duration) ([]inbox.Task, error) {
	tasks, err := s.leaseHeads(ctx, tx, owner, lane, n, d)
	if err != nil || len(tasks) == n {
		return tasks, err
	}
	unkeyed, err := s.leaseDeliveries(ctx, tx, owner, lane, n-len(tasks), d, true)
	return append(tasks, unkeyed...), err
}

// leaseHeads locks up to n due heads of lane's keys and leases them with
// their keys, returning them with their events in event id order.
func (s *Store) leaseHeads(ctx context.Context, tx pgx.Tx, owner string, lane inbox.Lane, n int, d time.Duration) ([]inbox.Task, error) {
	rows, err := tx.Query(ctx, orderedHeads, s.clock(), lane.Source, lane.Destination, n)
	if err != nil {
		return nil, err
	}
	var (
		ids  []int64
		keys []string
	)
	for rows.Next() {
		var (
			id  int64
			key string
		)
		if err := rows.Scan(&id, &key); err != nil {
			rows.Close()
			return nil, err
		}
		ids, keys = append(ids, id), append(keys, key)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return nil, err
	}
	rows, err = tx.Query(ctx, leaseHeads, s.clock(), lane.Source, lane.Destination, ids, keys, owner, micros(d))
	if err != nil {
		return nil, err
	}
	return collectTasks(rows, true)
}

// releaseKeys ends the key leases of ordered deliveries whose attempts
// were recorded (their events ids, destinations, sources and keys): a
// delivery that failed for good holds its key (Done.Block) or counts as
// a skip, which the key's next delivery reports.
const releaseKeys = `UPDATE inbox_order_keys k SET lease_owner = '', lease_until = '-infinity', leased = 0,
	skipped = k.skipped + r.skip, blocked = CASE WHEN r.block > 0 THEN r.block ELSE k.blocked END
FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::integer[], $6::bigint[])
	AS r(event_id, destination, source, key, skip, block)
WHERE k.source = r.source AND k.destination = r.destination AND k.key = r.key
  AND k.lease_owner = $7 AND k.leased = r.event_id`

// keyRelease gathers the key leases to end in one recordDone.
type keyRelease struct {
	ids               []int64
	dests, srcs, keys []string
	skips             []int32
	blocks            []int64
}

// add adds the key of the ordered delivery whose attempt dn recorded.
func (r *keyRelease) add(source, key string, dn inbox.Done) {
	var skip int32
	var block int64
	if dn.Status == inbox.DeliveryFailed {
		if dn.Block {
			block = dn.Attempt.EventID
		} else {
			skip = 1
		}
	}
	r.ids, r.dests, r.srcs, r.keys = append(r.ids, dn.Attempt.EventID), append(r.dests, dn.Attempt.Destination),
		append(r.srcs, source), append(r.keys, key)
	r.skips, r.blocks = append(r.skips, skip), append(r.blocks, block)
}

// exec ends the gathered leases held by owner.
func (r *keyRelease) exec(ctx context.Context, tx pgx.Tx, owner string) error {
	if len(r.ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, releaseKeys, r.ids, r.dests, r.srcs, r.keys, r.skips, r.blocks, owner)
	return err
}

// SkipKey implements inbox.OrderSkipper.
func (s *Store) SkipKey(ctx context.Context, lane inbox.Lane, key string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE inbox_order_keys SET blocked = 0, skipped = skipped + 1
		WHERE source = $1 AND destination = $2 AND key = $3 AND blocked > 0`, lane.Source, lane.Destination, key)
	if err != nil {
		return false, inbox.Fail(ctx, "skip key", err)
	}
	return tag.RowsAffected() > 0, nil
}

// blockedKeysQuery counts the blocked keys of each lane.
const blockedKeysQuery = `SELECT source, destination, count(*) FROM inbox_order_keys
	WHERE blocked > 0 GROUP BY source, destination`

// BlockedKeys implements inbox.OrderSkipper.
func (s *Store) BlockedKeys(ctx context.Context, lane inbox.Lane, limit int) ([]inbox.BlockedKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT key, blocked FROM inbox_order_keys
		WHERE source = $1 AND destination = $2 AND blocked > 0 ORDER BY key LIMIT $3`, lane.Source, lane.Destination, limit)
	if err != nil {
		return nil, inbox.Fail(ctx, "blocked keys", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[inbox.BlockedKey])
	if err != nil {
		return nil, inbox.Fail(ctx, "blocked keys", err)
	}
	return keys, nil
}
