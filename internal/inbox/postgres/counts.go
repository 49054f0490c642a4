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

// CountDuplicates implements intake.DuplicateCounter: it adds duplicates
// answered before they reached the store to the sources' counts.
func (s *Store) CountDuplicates(ctx context.Context, bySource map[string]int64) error {
	c := counts{}
	for source, n := range bySource {
		c[[2]string{source, "duplicates"}] += n
	}
	if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return c.save(ctx, tx) }); err != nil {
		return fail(ctx, "count duplicates", err)
	}
	return nil
}
