package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

var (
	_ inbox.OrderedDispatcher = (*Store)(nil)
	_ inbox.OrderSkipper      = (*Store)(nil)
)

// orderSchema keeps per-key order for destinations with order: entity.
// A delivery records its key and its event's version order (ord), and,
// once leased, its position in the key (seq) and the skips before it.
// deliveries_heads holds the pending deliveries that have a key, in the
// order a key's head is chosen. order_keys is one row per key of a lane:
// the last position given, the skips not yet reported, the event whose
// failed delivery holds the key (blocked, 0 for none), and the key's
// lease while one of its deliveries is in flight, so that the lease of a
// key, not of a delivery, decides that one delivery at a time is made.
const orderSchema = `
ALTER TABLE deliveries ADD COLUMN order_key TEXT NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN ord INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN skipped INTEGER NOT NULL DEFAULT 0;
CREATE INDEX deliveries_heads ON deliveries(source, destination, order_key, ord, event_id, next_attempt_at)
	WHERE status = 'pending' AND order_key != '';
CREATE TABLE order_keys (
	source      TEXT    NOT NULL,
	destination TEXT    NOT NULL,
	key         TEXT    NOT NULL,
	seq         INTEGER NOT NULL DEFAULT 0,
	skipped     INTEGER NOT NULL DEFAULT 0,
	blocked     INTEGER NOT NULL DEFAULT 0,
	lease_owner TEXT    NOT NULL DEFAULT '',
	lease_until INTEGER NOT NULL DEFAULT 0,
	leased      INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (source, destination, key)
) WITHOUT ROWID;
CREATE INDEX order_keys_blocked ON order_keys(source, destination) WHERE blocked > 0;
`

// openKey gives an ordered delivery's key its row.
const openKey = `INSERT INTO order_keys (source, destination, key) VALUES (?, ?, ?)
	ON CONFLICT (source, destination, key) DO NOTHING`

// unblockKey lifts a block that the delivery's own event set: the event
// was replayed, and its delivery is pending again as the key's head. It
// returns the key's last position, which the blocked delivery had and
// takes again, so that no gap shows where nothing was skipped.
const unblockKey = `UPDATE order_keys SET blocked = 0
	WHERE source = ? AND destination = ? AND key = ? AND blocked = ?
	RETURNING seq`

// openOrdered gives the new ordered delivery of event id to lane its
// key's row, and takes up its position when its event blocked the key.
func openOrdered(ctx context.Context, tx *sql.Tx, lane inbox.Lane, key string, id int64) error {
	if _, err := tx.ExecContext(ctx, openKey, lane.Source, lane.Destination, key); err != nil {
		return err
	}
	var seq int64
	err := tx.QueryRowContext(ctx, unblockKey, lane.Source, lane.Destination, key, id).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE deliveries SET seq = ? WHERE event_id = ? AND destination = ?`, seq, id, lane.Destination)
	return err
}

// orderedHeads picks the due heads of a lane's keys: per key the pending
// delivery of the lowest version order, then event id; due when its time
// has come, no delivery of its key is leased and the key is not blocked.
const orderedHeads = `SELECT h.event_id, h.order_key FROM (
		SELECT event_id, order_key, next_attempt_at,
			row_number() OVER (PARTITION BY order_key ORDER BY ord, event_id) AS r
		FROM deliveries INDEXED BY deliveries_heads
		WHERE source = ? AND destination = ? AND status = 'pending' AND order_key != ''
	) h JOIN order_keys k ON k.source = ? AND k.destination = ? AND k.key = h.order_key
	WHERE h.r = 1 AND h.next_attempt_at <= ? AND k.lease_until <= ? AND k.blocked = 0
	ORDER BY h.next_attempt_at, h.event_id LIMIT ?`

// leaseKey takes a key's lease for its head, and counts a new position
// when the head has none yet (fresh), which then reports the skips since
// the last one.
const leaseKey = `UPDATE order_keys SET lease_owner = ?, lease_until = ?, leased = ?,
	seq = seq + ?, skipped = CASE WHEN ? THEN 0 ELSE skipped END
	WHERE source = ? AND destination = ? AND key = ?`

// leaseHead leases the head delivery, with its position.
const leaseHead = `UPDATE deliveries SET lease_owner = ?, lease_until = ?, seq = ?, skipped = ?
	WHERE event_id = ? AND destination = ?
	RETURNING ` + deliveryFields

// DispatchOrdered implements inbox.OrderedDispatcher.
func (s *Store) DispatchOrdered(ctx context.Context, owner string, lane inbox.Lane, done []inbox.Done, n int, d time.Duration) (inbox.Dispatched, error) {
	return s.dispatch(ctx, owner, lane, done, n, d, &inbox.RateLimit{Ordered: true})
}

// leaseOrdered leases up to n due heads of lane's keys, then deliveries
// without a key. SQLite runs one write transaction at a time, so the
// heads read are the heads leased.
func (s *Store) leaseOrdered(ctx context.Context, tx *sql.Tx, owner string, lane inbox.Lane, n int, now, until int64) ([]inbox.Task, error) {
	tasks, err := s.leaseHeads(ctx, tx, owner, lane, n, now, until)
	if err != nil || len(tasks) == n {
		return tasks, err
	}
	unkeyed, err := s.leaseDeliveries(ctx, tx, owner, lane, n-len(tasks), now, until, true)
	return append(tasks, unkeyed...), err
}

// leaseHeads leases up to n due heads of lane's keys with their events.
func (s *Store) leaseHeads(ctx context.Context, tx *sql.Tx, owner string, lane inbox.Lane, n int, now, until int64) ([]inbox.Task, error) {
	if held, err := s.laneHeld(ctx, tx, lane); err != nil || held {
		return nil, err
	}
	type head struct {
		id  int64
		key string
	}
	var heads []head
	err := s.db.EachRow(ctx, tx, orderedHeads, []any{lane.Source, lane.Destination, lane.Source, lane.Destination, now, now, n}, func(rows *sql.Rows) error {
		var h head
		if err := rows.Scan(&h.id, &h.key); err != nil {
			return err
		}
		heads = append(heads, h)
		return nil
	})
	if err != nil || len(heads) == 0 {
		return nil, err
	}
	tasks := make([]inbox.Task, 0, len(heads))
	for _, h := range heads {
		var (
			seq, at         int64
			skipped, before int
		)
		if err := tx.QueryRowContext(ctx, `SELECT k.seq, k.skipped, d.seq, d.skipped FROM order_keys k, deliveries d
			WHERE k.source = ? AND k.destination = ? AND k.key = ? AND d.event_id = ? AND d.destination = ?`,
			lane.Source, lane.Destination, h.key, h.id, lane.Destination).Scan(&seq, &skipped, &at, &before); err != nil {
			return nil, err
		}
		fresh := at == 0
		if _, err := tx.ExecContext(ctx, leaseKey, owner, until, h.id, fresh, fresh,
			lane.Source, lane.Destination, h.key); err != nil {
			return nil, err
		}
		if fresh {
			at = seq + 1
		} else {
			skipped = before
		}
		d, err := scanDelivery(tx.QueryRowContext(ctx, leaseHead, owner, until, at, skipped, h.id, lane.Destination))
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, inbox.Task{Delivery: d})
	}
	return s.withEvents(ctx, tx, tasks)
}

// releaseKey ends the lease of an ordered delivery's key, which owner
// holds for the delivery's event, when its attempt is recorded. A
// delivery that failed for good holds the key (dn.Block) or counts as a
// skip, which the key's next delivery reports.
func (s *Store) releaseKey(ctx context.Context, tx *sql.Tx, lane inbox.Lane, key, owner string, dn inbox.Done) error {
	failed := dn.Status == inbox.DeliveryFailed
	var blocked int64
	if failed && dn.Block {
		blocked = dn.Attempt.EventID
	}
	skip := failed && !dn.Block
	_, err := tx.ExecContext(ctx, `UPDATE order_keys SET lease_owner = '', lease_until = 0, leased = 0,
		skipped = skipped + ?, blocked = CASE WHEN ? > 0 THEN ? ELSE blocked END
		WHERE source = ? AND destination = ? AND key = ? AND lease_owner = ? AND leased = ?`,
		skip, blocked, blocked, lane.Source, lane.Destination, key, owner, dn.Attempt.EventID)
	return err
}

// SkipKey implements inbox.OrderSkipper.
func (s *Store) SkipKey(ctx context.Context, lane inbox.Lane, key string) (bool, error) {
	var skipped bool
	err := s.write(ctx, "skip key", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE order_keys SET blocked = 0, skipped = skipped + 1
			WHERE source = ? AND destination = ? AND key = ? AND blocked > 0`, lane.Source, lane.Destination, key)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		skipped = n > 0
		return err
	})
	return skipped, err
}

// BlockedKeys implements inbox.OrderSkipper.
func (s *Store) BlockedKeys(ctx context.Context, lane inbox.Lane, limit int) ([]inbox.BlockedKey, error) {
	var out []inbox.BlockedKey
	err := s.each(ctx, `SELECT key, blocked FROM order_keys INDEXED BY order_keys_blocked
		WHERE source = ? AND destination = ? AND blocked > 0 ORDER BY key LIMIT ?`, func(rows *sql.Rows) error {
		var k inbox.BlockedKey
		if err := rows.Scan(&k.Key, &k.EventID); err != nil {
			return err
		}
		out = append(out, k)
		return nil
	}, lane.Source, lane.Destination, limit)
	if err != nil {
		return nil, inbox.Fail(ctx, "blocked keys", err)
	}
	return out, nil
}
