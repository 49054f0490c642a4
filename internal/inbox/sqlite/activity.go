package sqlite

import (
	"context"
	"database/sql"
	"math"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

var _ inbox.ActivityReader = (*Store)(nil)

// activityQuery counts, per interval of ?1 nanoseconds from ?2 until ?4, the events
// received (events_received), processed (events_processed) and dead
// (events_dead), each an index range of the interval's rows that covers
// the query, and adds the duplicates of duplicates_by_minute from minute
// ?3. Its cost grows with the events of the period, not with all the
// events kept.
const activityQuery = `SELECT b, sum(received), sum(duplicates), sum(processed), sum(dead) FROM (
	SELECT received_at / ?1 AS b, count(*) AS received, 0 AS duplicates, 0 AS processed, 0 AS dead
		FROM events INDEXED BY events_received WHERE received_at >= ?2 AND received_at < ?4 GROUP BY 1
	UNION ALL
	SELECT processed_at / ?1, 0, 0, count(*), 0
		FROM events INDEXED BY events_processed WHERE status = 'processed' AND processed_at >= ?2 AND processed_at < ?4
		GROUP BY 1
	UNION ALL
	SELECT dead_at / ?1, 0, 0, 0, count(*)
		FROM events INDEXED BY events_dead WHERE dead_at > 0 AND dead_at >= ?2 AND dead_at < ?4 AND status = 'dead'
		GROUP BY 1
	UNION ALL
	SELECT minute * 60000000000 / ?1, 0, sum(n), 0, 0 FROM duplicates_by_minute
		WHERE minute >= ?3 AND minute * 60000000000 < ?4 GROUP BY 1
) GROUP BY b ORDER BY b`

// Activity implements inbox.ActivityReader.
func (s *Store) Activity(ctx context.Context, since, until time.Time, step time.Duration) ([]inbox.Activity, error) {
	if step <= 0 || step%time.Minute != 0 {
		return nil, inbox.ErrBadStep
	}
	from := since.UnixNano() - since.UnixNano()%int64(step)
	to := int64(math.MaxInt64)
	if !until.IsZero() {
		to = until.UnixNano()
	}
	var out []inbox.Activity
	err := s.each(ctx, activityQuery, func(rows *sql.Rows) error {
		var (
			b int64
			a inbox.Activity
		)
		if err := rows.Scan(&b, &a.Received, &a.Duplicates, &a.Processed, &a.Dead); err != nil {
			return err
		}
		a.Start = time.Unix(0, b*int64(step)).UTC()
		out = append(out, a)
		return nil
	}, int64(step), from, from/int64(time.Minute), to)
	if err != nil {
		return nil, inbox.Fail(ctx, "activity", err)
	}
	return out, nil
}
