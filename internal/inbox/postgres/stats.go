package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookgate/hookgate/internal/inbox"
)

// Stats implements inbox.Store. What it costs, whatever the number of
// events kept: counts come from inbox_counts, a sum over one row per
// (source, counter) for each session that wrote since the last sweep
// (Sweep folds ended sessions' rows); the oldest pending event is the
// first entry of two partial indexes (inbox_events_due,
// inbox_events_delivering), a probe each; lanes read inbox_lanes, one row
// per lane, and count the pending deliveries in the partial index
// inbox_deliveries_due, which grows with the delivery backlog only. The
// reads run outside any transaction, so under load they may be a moment
// apart.
func (s *Store) Stats(ctx context.Context) (inbox.Stats, error) {
	st := inbox.Stats{Sources: map[string]inbox.SourceStats{}}
	rows, err := s.pool.Query(ctx, `SELECT source, counter, sum(n)::bigint FROM inbox_counts
		GROUP BY source, counter HAVING sum(n) <> 0`)
	if err != nil {
		return inbox.Stats{}, inbox.Fail(ctx, "stats", err)
	}
	for rows.Next() {
		var (
			source, counter string
			n               int64
		)
		if err := rows.Scan(&source, &counter, &n); err != nil {
			rows.Close()
			return inbox.Stats{}, inbox.Fail(ctx, "stats", err)
		}
		ss, ok := st.Sources[source]
		if !ok {
			ss.ByStatus = map[inbox.Status]int{}
		}
		switch counter {
		case "accepted":
			ss.Accepted = n
		case "duplicates":
			ss.Duplicates = n
		default:
			ss.ByStatus[inbox.Status(counter)] = int(n)
			if inbox.Status(counter).Open() {
				st.Pending += int(n)
			}
		}
		st.Sources[source] = ss
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return inbox.Stats{}, inbox.Fail(ctx, "stats", err)
	}
	var oldest pgtype.Timestamptz
	if err := s.pool.QueryRow(ctx, oldestQuery).Scan(&oldest); err != nil {
		return inbox.Stats{}, inbox.Fail(ctx, "stats", err)
	}
	st.OldestPending = fromTS(oldest)
	if st.Lanes, err = s.lanes(ctx); err != nil {
		return inbox.Stats{}, inbox.Fail(ctx, "stats", err)
	}
	return st, nil
}

// oldestQuery finds when the oldest open event was received: ids grow
// with arrival, so it is the first entry of inbox_events_due or of
// inbox_events_delivering.
const oldestQuery = `SELECT min(received_at) FROM (
	(SELECT received_at FROM inbox_events WHERE status IN ('received', 'retry') ORDER BY id LIMIT 1)
	UNION ALL
	(SELECT received_at FROM inbox_events WHERE status = 'delivering' ORDER BY id LIMIT 1)) AS o`

// pendingDeliveriesQuery counts the pending deliveries per lane, in the
// partial index inbox_deliveries_due.
const pendingDeliveriesQuery = `SELECT source, destination, count(*) FROM inbox_deliveries
	WHERE status = 'pending' GROUP BY source, destination`

// lanes returns the recorded lane states and the pending deliveries per
// lane, by source then destination.
func (s *Store) lanes(ctx context.Context) ([]inbox.LaneState, error) {
	byLane := inbox.LaneStates{}
	rows, err := s.pool.Query(ctx, `SELECT source, destination, state, failures, until, last_error, changed_at, held FROM inbox_lanes`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var (
			l              inbox.Lane
			state, lastErr string
			failures       int
			until, changed pgtype.Timestamptz
			held           bool
		)
		if err := rows.Scan(&l.Source, &l.Destination, &state, &failures, &until, &lastErr, &changed, &held); err != nil {
			rows.Close()
			return nil, err
		}
		st := byLane.Get(l)
		st.State, st.Failures, st.Until, st.LastError, st.Changed = state, failures, fromTS(until), lastErr, fromTS(changed)
		st.Held = held
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := s.countByLane(ctx, pendingDeliveriesQuery, func(st *inbox.LaneState, n int) { st.Pending = n }, byLane); err != nil {
		return nil, err
	}
	if err := s.countByLane(ctx, blockedKeysQuery, func(st *inbox.LaneState, n int) { st.Blocked = n }, byLane); err != nil {
		return nil, err
	}
	return byLane.Sorted(), nil
}

// countByLane runs query, whose rows are a lane (source, destination) and
// a count, and sets each lane's count in byLane.
func (s *Store) countByLane(ctx context.Context, query string, set func(*inbox.LaneState, int), byLane inbox.LaneStates) error {
	rows, err := s.pool.Query(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			l inbox.Lane
			n int
		)
		if err := rows.Scan(&l.Source, &l.Destination, &n); err != nil {
			return err
		}
		set(byLane.Get(l), n)
	}
	return rows.Err()
}
