package postgres

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/internal/inbox"
)

// Replay implements inbox.Store. Events are walked in id order, one page
// per transaction, with the last id of a page as the start of the next
// (keyset pagination), so a replay of millions of events holds the locks
// of one page at a time. Events under a live lease, or with a delivery
// under one, are skipped: a worker is processing them and will finish
// them itself. Without f.Dead every status is replayed.
func (s *Store) Replay(ctx context.Context, f inbox.ReplayFilter, progress func(done int)) (int, error) {
	page := f.PageSize
	if page <= 0 {
		page = inbox.DefaultLimit
	}
	pick, args := replayPick(f, page)
	drop := "status <> 'delivered'"
	var which []any
	switch {
	case f.Redeliver && f.Destination != "":
		drop, which = "(status <> 'delivered' OR destination = $2)", []any{f.Destination}
	case f.Redeliver:
		drop = "true"
	}
	done := 0
	for {
		args[0] = s.clock()
		n, last, err := s.replayPage(ctx, pick, args, drop, which)
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, nil
		}
		done += n
		if progress != nil {
			progress(done)
		}
		if n < page {
			return done, nil
		}
		args[1] = last
	}
}

// replayPick is the statement that picks and locks a page of the events
// f selects, and its arguments: $1 is the clock, $2 the cursor (the last
// id of the page before), $3 the page size.
func replayPick(f inbox.ReplayFilter, page int) (string, []any) {
	args := []any{nil, int64(0), page}
	cond := []string{"lease_until <= clock.now", "id > $2",
		"NOT EXISTS (SELECT 1 FROM inbox_deliveries WHERE event_id = inbox_events.id AND lease_until > clock.now)"}
	add := func(c string, v any) {
		args = append(args, v)
		cond = append(cond, c+" $"+strconv.Itoa(len(args)))
	}
	for _, c := range f.Conditions(func(t time.Time) any { return t }) {
		add(c.Test, c.Arg)
	}
	if f.FailedTo != "" {
		add(`EXISTS (SELECT 1 FROM inbox_deliveries d WHERE d.event_id = inbox_events.id AND d.status = 'failed'
			AND d.destination =`, f.FailedTo)
		cond[len(cond)-1] += ")"
	}
	if len(f.IDs) > 0 {
		ids := slices.Clone(f.IDs)
		slices.Sort(ids)
		add("id = ANY(", slices.Compact(ids))
		cond[len(cond)-1] += ")"
	}
	return `WITH clock AS (SELECT coalesce($1::timestamptz, now()) AS now)
		SELECT id, source, status FROM inbox_events, clock WHERE ` + strings.Join(cond, " AND ") +
		` ORDER BY id LIMIT $3 FOR UPDATE OF inbox_events`, args
}

// replayPage puts back the events pick selects and locks, and returns how
// many and the last one's id.
func (s *Store) replayPage(ctx context.Context, pick string, args []any, drop string, which []any) (n int, last int64, err error) {
	err = s.tx(ctx, "replay", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, pick, args...)
		if err != nil {
			return err
		}
		var ids []int64
		moves := counts{}
		for rows.Next() {
			var (
				id             int64
				source, status string
			)
			if err := rows.Scan(&id, &source, &status); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
			moves.move(source, inbox.Status(status), inbox.StatusReceived)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		n = len(ids)
		if n == 0 {
			return nil
		}
		last = ids[n-1]
		if _, err := tx.Exec(ctx, "DELETE FROM inbox_deliveries WHERE event_id = ANY($1) AND "+drop,
			append([]any{ids}, which...)...); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE inbox_events SET status = 'received', attempts = 0,
			next_attempt_at = '-infinity', last_error = '', processed_at = '-infinity', dead_at = '-infinity',
			lease_owner = '', lease_until = '-infinity' WHERE id = ANY($1)`, ids); err != nil {
			return err
		}
		return moves.save(ctx, tx)
	})
	return n, last, err
}
