package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/internal/inbox"
)

// counts are changes to inbox_counts, by source and counter.
type counts map[[2]string]int64

// move counts an event of source going from status was to status now.
func (c counts) move(source string, was, now inbox.Status) {
	if was == now {
		return
	}
	c[[2]string{source, string(was)}]--
	c[[2]string{source, string(now)}]++
}

// save adds the changes to this session's shard of inbox_counts, in one
// statement. No other session writes that shard, so the upsert never waits
// on another transaction; Sweep folds the shards of ended sessions only.
func (c counts) save(ctx context.Context, tx pgx.Tx) error {
	var (
		sources, counters []string
		deltas            []int64
	)
	for k, n := range c {
		if n != 0 {
			sources, counters, deltas = append(sources, k[0]), append(counters, k[1]), append(deltas, n)
		}
	}
	if len(deltas) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO inbox_counts (source, counter, shard, n)
		SELECT source, counter, pg_backend_pid(), n FROM unnest($1::text[], $2::text[], $3::bigint[]) AS c(source, counter, n)
		ON CONFLICT (source, counter, shard) DO UPDATE SET n = inbox_counts.n + excluded.n`, sources, counters, deltas)
	return err
}

var _ inbox.DuplicateCounter = (*Store)(nil)

// CountDuplicates implements inbox.DuplicateCounter: it adds duplicates
// answered before they reached the store to the sources' counts, and to
// their minute's (duplicatesQuery).
func (s *Store) CountDuplicates(ctx context.Context, bySource map[string]int64) error {
	c := counts{}
	for source, n := range bySource {
		c[[2]string{source, "duplicates"}] += n
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := c.save(ctx, tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, duplicatesQuery, duplicatesArgs(s.clock(), bySource)...)
		return err
	})
	if err != nil {
		return inbox.Fail(ctx, "count duplicates", err)
	}
	return nil
}

// duplicatesQuery adds duplicates ($2 sources, $3 counts) to the row of
// the minute of $1 (the clock) in this session's shard of
// inbox_duplicates. It is a write of its own, made only when there are
// duplicates, so a batch of new events writes no more than before.
const duplicatesQuery = `WITH clock AS (SELECT coalesce($1::timestamptz, now()) AS now)
	INSERT INTO inbox_duplicates (minute, source, shard, n)
	SELECT to_timestamp(floor(extract(epoch FROM clock.now) / 60) * 60), d.source, pg_backend_pid(), d.n
	FROM unnest($2::text[], $3::bigint[]) AS d(source, n), clock WHERE d.n > 0
	ON CONFLICT (minute, source, shard) DO UPDATE SET n = inbox_duplicates.n + excluded.n`

// duplicatesArgs are the arguments of duplicatesQuery.
func duplicatesArgs(clock any, bySource map[string]int64) []any {
	sources, ns := make([]string, 0, len(bySource)), make([]int64, 0, len(bySource))
	for source, n := range bySource {
		sources, ns = append(sources, source), append(ns, n)
	}
	return []any{clock, sources, ns}
}
