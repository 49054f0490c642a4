package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/sweep"
)

// sweepChunk is the most rows one sweep statement removes, so that a
// sweep holds few locks at a time.
const sweepChunk = 1000

// Sweep implements inbox.Store. Keys, digests and processed events go in
// chunks of at most sweepChunk rows, each its own transaction, paced by
// sweep.Run; a chunk skips the rows another session holds (an accept
// taking an expired key over, a worker on an event), so a sweep never
// waits on them nor makes them wait. If a chunk fails, the result counts
// what the committed ones removed. Sweep also folds the count shards of
// ended sessions into one, and removes duplicates counted by minute once
// they are inbox.ActivityKept old.
func (s *Store) Sweep(ctx context.Context, processedBefore time.Time) (inbox.SweepResult, error) {
	var res inbox.SweepResult
	var err error
	if res.Keys, err = s.sweepExpired(ctx, "inbox_keys", "hash"); err != nil {
		return res, err
	}
	if res.Digests, err = s.sweepExpired(ctx, "inbox_digests", "digest"); err != nil {
		return res, err
	}
	res.Events, err = sweep.Run(ctx, sweepChunk, func(limit int) (int, error) {
		var n int
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var err error
			n, err = sweepEvents(ctx, tx, processedBefore, limit)
			return err
		})
		return n, err
	})
	if err != nil {
		return res, inbox.Fail(ctx, "sweep events", err)
	}
	if _, err := s.pool.Exec(ctx, foldCounts); err != nil {
		return res, inbox.Fail(ctx, "sweep counts", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM inbox_duplicates WHERE minute < coalesce($1::timestamptz, now()) - $2::bigint * interval '1 microsecond'`,
		s.clock(), micros(inbox.ActivityKept)); err != nil {
		return res, inbox.Fail(ctx, "sweep duplicates", err)
	}
	return res, nil
}

// sweepExpired deletes the expired rows of table (keyed by column) and
// returns how many it removed.
func (s *Store) sweepExpired(ctx context.Context, table, column string) (int, error) {
	n, err := sweep.Run(ctx, sweepChunk, func(limit int) (int, error) {
		tag, err := s.pool.Exec(ctx, sweepExpiredQuery(table, column), s.clock(), limit)
		return int(tag.RowsAffected()), err
	})
	if err != nil {
		return n, inbox.Fail(ctx, "sweep "+table, err)
	}
	return n, nil
}

// sweepExpiredQuery deletes up to $2 rows of table (keyed by column)
// whose expires has passed. The rows are picked into an array first:
// as a join (IN with a subquery), the generic plan that a prepared
// statement switches to scanned the whole table to find them.
func sweepExpiredQuery(table, column string) string {
	return `DELETE FROM ` + table + ` WHERE ` + column + ` = ANY(ARRAY(
		SELECT ` + column + ` FROM ` + table + ` WHERE expires <= coalesce($1::timestamptz, now())
		LIMIT $2 FOR UPDATE SKIP LOCKED))`
}

// sweepEventsQuery deletes up to $2 events processed before $1, picked
// into an array for the reason sweepExpiredQuery gives.
const sweepEventsQuery = `DELETE FROM inbox_events WHERE id = ANY(ARRAY(
	SELECT id FROM inbox_events WHERE status = 'processed' AND processed_at < $1
	LIMIT $2 FOR UPDATE SKIP LOCKED)) RETURNING id, source`

// sweepEvents deletes up to limit events processed before cutoff, with
// their deliveries and attempt logs, and uncounts them.
func sweepEvents(ctx context.Context, tx pgx.Tx, cutoff time.Time, limit int) (int, error) {
	rows, err := tx.Query(ctx, sweepEventsQuery, cutoff, limit)
	if err != nil {
		return 0, err
	}
	var ids []int64
	gone := counts{}
	for rows.Next() {
		var (
			id     int64
			source string
		)
		if err := rows.Scan(&id, &source); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
		gone[[2]string{source, string(inbox.StatusProcessed)}]--
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return 0, err
	}
	for _, table := range []string{"inbox_deliveries", "inbox_attempts"} {
		if _, err := tx.Exec(ctx, "DELETE FROM "+table+" WHERE event_id = ANY($1)", ids); err != nil {
			return 0, err
		}
	}
	return len(ids), gone.save(ctx, tx)
}

// foldCounts adds the count shards of sessions that have ended (their pid
// is not a live backend's) into shard 0, so the rows Stats sums stay about
// as many as there are live sessions. A live session's shard is left to
// it: folding it would wait on its transaction.
const foldCounts = `WITH gone AS (
	DELETE FROM inbox_counts WHERE shard <> 0
		AND shard NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
	RETURNING source, counter, n
)
INSERT INTO inbox_counts (source, counter, shard, n)
SELECT source, counter, 0, sum(n) FROM gone GROUP BY source, counter
ON CONFLICT (source, counter, shard) DO UPDATE SET n = inbox_counts.n + excluded.n`
