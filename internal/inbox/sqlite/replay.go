package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// Replay implements inbox.Store. Events are walked in id order, one page
// per write transaction, with the last id of a page as the start of the
// next (keyset pagination), so a replay of millions of events holds
// neither the write lock nor more than one page of ids at a time. Events
// under a live lease are skipped: a worker is processing them and will
// finish them itself. Without f.Dead every status is replayed.
func (s *Store) Replay(ctx context.Context, f inbox.ReplayFilter, progress func(done int)) (int, error) {
	page := f.PageSize
	if page <= 0 {
		page = inbox.DefaultLimit
	}
	cond, args := replayFilter(f)
	if len(f.IDs) == 0 {
		return s.replayPages(ctx, f, cond, args, page, 0, progress)
	}
	ids := slices.Clone(f.IDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	done := 0
	for lo := 0; lo < len(ids); lo += idChunk {
		chunk := ids[lo:min(lo+idChunk, len(ids))]
		n, err := s.replayPages(ctx, f,
			append(slices.Clone(cond), "id IN ("+placeholders(len(chunk))+")"),
			append(slices.Clone(args), int64Args(chunk)...),
			page, done, progress)
		done = n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// replayFilter turns f, except its ids, into SQL conditions.
func replayFilter(f inbox.ReplayFilter) (cond []string, args []any) {
	for _, c := range f.Conditions(func(t time.Time) any { return t.UnixNano() }) {
		cond = append(cond, c.Test+" ?")
		args = append(args, c.Arg)
	}
	if f.FailedTo != "" {
		cond = append(cond, "EXISTS (SELECT 1 FROM deliveries WHERE event_id = events.id AND destination = ? AND status = 'failed')")
		args = append(args, f.FailedTo)
	}
	return cond, args
}

// replayPages replays the events matching cond page by page, adding to
// done (the count so far) and reporting the running count to progress
// after each page.
func (s *Store) replayPages(ctx context.Context, f inbox.ReplayFilter, cond []string, args []any, page, done int, progress func(int)) (int, error) {
	var cursor int64
	for {
		n, last, err := s.replayPage(ctx, f, cond, args, cursor, page)
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
		cursor = last
	}
}

// replayPage replays up to page matching events after id cursor and
// returns how many it replayed and the last one's id. The rows are picked
// once by id; the updates then name the same rows as the id range
// (cursor, last] under the same conditions, which inside the transaction
// is exactly the picked set, without binding a list of ids.
func (s *Store) replayPage(ctx context.Context, f inbox.ReplayFilter, cond []string, args []any, cursor int64, page int) (n int, last int64, err error) {
	err = s.write(ctx, "replay", func(tx *sql.Tx) error {
		now := s.now().UnixNano()
		where := strings.Join(append(slices.Clone(cond), "lease_until <= ?", "id > ?",
			"NOT EXISTS (SELECT 1 FROM deliveries WHERE event_id = events.id AND lease_until > ?)"), " AND ")
		pick := append(slices.Clone(args), now, cursor, now)
		var ids []int64
		rows, err := tx.QueryContext(ctx, "SELECT id FROM events WHERE "+where+" ORDER BY id LIMIT ?", append(pick, page)...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
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
		picked := where + " AND id <= ?"
		pickArgs := append(pick, last)
		if f.FailedTo != "" {
			// Deleting the failed deliveries ends what picked the rows:
			// the statements name them by id instead.
			picked, pickArgs = "id IN (SELECT value FROM json_each(?))", []any{idList(ids)}
		}
		var which []any
		drop := "status != 'delivered'"
		switch {
		case f.Redeliver && f.Destination != "":
			drop, which = "(status != 'delivered' OR destination = ?)", []any{f.Destination}
		case f.Redeliver:
			drop = "1"
		}
		deliveries := "DELETE FROM deliveries WHERE " + drop + " AND event_id IN (SELECT id FROM events WHERE " + picked + ")"
		if _, err := tx.ExecContext(ctx, deliveries, append(which, pickArgs...)...); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE events SET status = 'received', attempts = 0, next_attempt_at = 0,
			last_error = '', processed_at = 0, dead_at = 0, lease_owner = '', lease_until = 0 WHERE `+picked, pickArgs...)
		return err
	})
	return n, last, err
}
