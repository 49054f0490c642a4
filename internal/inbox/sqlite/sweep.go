package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// Sweep implements inbox.Store. Expired keys, expired replay guard digests
// and processed events go in transactions of at most a thousand keys or
// idChunk rows (sqlitedb.DB.Sweep), so intake waits behind one short
// chunk, not the whole sweep. If a transaction fails, the result counts
// what the committed ones removed. Duplicates counted by minute go once
// they are inbox.ActivityKept old.
func (s *Store) Sweep(ctx context.Context, processedBefore time.Time) (inbox.SweepResult, error) {
	var res inbox.SweepResult
	keys, err := s.keys.Sweep(ctx)
	res.Keys = keys
	if err != nil {
		return res, inbox.Fail(ctx, "sweep keys", err)
	}
	now := s.now().UnixNano()
	res.Digests, err = s.db.Sweep(ctx, idChunk, func(tx *sql.Tx, limit int) (int, error) {
		return sweepDigests(ctx, tx, now, limit)
	})
	if err != nil {
		return res, inbox.Fail(ctx, "sweep digests", err)
	}
	err = s.write(ctx, "sweep duplicates", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM duplicates_by_minute WHERE minute < ?`,
			(now-int64(inbox.ActivityKept))/int64(time.Minute))
		return err
	})
	if err != nil {
		return res, err
	}
	cutoff := processedBefore.UnixNano()
	res.Events, err = s.db.Sweep(ctx, idChunk, func(tx *sql.Tx, limit int) (int, error) {
		return sweepEvents(ctx, tx, cutoff, limit)
	})
	if err != nil {
		return res, inbox.Fail(ctx, "sweep", err)
	}
	return res, nil
}

// sweepQuery picks processed events older than a cutoff from the partial
// index events_processed; like leaseQuery it repeats the index's WHERE
// clause and names the index.
const sweepQuery = `SELECT id FROM events INDEXED BY events_processed
	WHERE status = 'processed' AND processed_at < ? LIMIT ?`

// sweepEvents deletes up to limit events processed before cutoff, and
// their deliveries and attempt logs.
func sweepEvents(ctx context.Context, tx *sql.Tx, cutoff int64, limit int) (int, error) {
	rows, err := tx.QueryContext(ctx, sweepQuery, cutoff, limit)
	if err != nil {
		return 0, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return 0, err
	}
	in, args := placeholders(len(ids)), int64Args(ids)
	for _, table := range []string{"deliveries", "attempts"} {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+table+" WHERE event_id IN ("+in+")", args...); err != nil {
			return 0, err
		}
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM events WHERE id IN ("+in+")", args...); err != nil {
		return 0, err
	}
	return len(ids), nil
}
