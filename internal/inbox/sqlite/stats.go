package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// Stats implements inbox.Store. Counts by status come from status_counts,
// which triggers keep in step with the events table. The three reads run
// outside any transaction, so under load they may be a moment apart.
func (s *Store) Stats(ctx context.Context) (inbox.Stats, error) {
	st := inbox.Stats{Sources: map[string]inbox.SourceStats{}}
	source := func(name string) inbox.SourceStats {
		ss, ok := st.Sources[name]
		if !ok {
			ss.ByStatus = map[inbox.Status]int{}
		}
		return ss
	}
	err := s.each(ctx, `SELECT source, status, n FROM status_counts WHERE n > 0`, func(rows *sql.Rows) error {
		var (
			name, status string
			n            int
		)
		if err := rows.Scan(&name, &status, &n); err != nil {
			return err
		}
		ss := source(name)
		ss.ByStatus[inbox.Status(status)] = n
		st.Sources[name] = ss
		return nil
	})
	if err != nil {
		return inbox.Stats{}, fail(ctx, "stats", err)
	}
	err = s.each(ctx, `SELECT source, accepted, duplicates FROM counters`, func(rows *sql.Rows) error {
		var name string
		var accepted, duplicates int64
		if err := rows.Scan(&name, &accepted, &duplicates); err != nil {
			return err
		}
		ss := source(name)
		ss.Accepted, ss.Duplicates = accepted, duplicates
		st.Sources[name] = ss
		return nil
	})
	if err != nil {
		return inbox.Stats{}, fail(ctx, "stats", err)
	}
	var oldest, delivering sql.NullInt64
	if err := s.db.QueryRowContext(ctx, pendingQuery).Scan(&st.Pending, &oldest); err != nil {
		return inbox.Stats{}, fail(ctx, "stats", err)
	}
	if err := s.db.QueryRowContext(ctx, oldestDelivering).Scan(&delivering); err != nil {
		return inbox.Stats{}, fail(ctx, "stats", err)
	}
	for _, ss := range st.Sources {
		st.Pending += ss.ByStatus[inbox.StatusDelivering]
	}
	if delivering.Valid && (!oldest.Valid || delivering.Int64 < oldest.Int64) {
		oldest = delivering
	}
	st.OldestPending = fromNanos(oldest.Int64)
	if st.Lanes, err = s.lanes(ctx); err != nil {
		return inbox.Stats{}, fail(ctx, "stats", err)
	}
	return st, nil
}

// pendingQuery counts the events waiting for a worker and finds the
// oldest within the partial index events_due, which covers it.
const pendingQuery = `SELECT count(*), min(received_at) FROM events INDEXED BY events_due
	WHERE status IN ('received', 'retry')`

// oldestDelivering is when the oldest delivering event was received: ids
// grow with arrival, so it is the one with the least id, the first entry
// of events_status for the status.
const oldestDelivering = `SELECT received_at FROM events
	WHERE id = (SELECT min(id) FROM events WHERE status = 'delivering')
	UNION ALL SELECT NULL LIMIT 1`

// lanes returns the recorded lane states and the pending deliveries per
// lane, by source then destination.
func (s *Store) lanes(ctx context.Context) ([]inbox.LaneState, error) {
	byLane := map[inbox.Lane]*inbox.LaneState{}
	get := func(l inbox.Lane) *inbox.LaneState {
		st := byLane[l]
		if st == nil {
			st = &inbox.LaneState{Lane: l, State: inbox.LaneHealthy}
			byLane[l] = st
		}
		return st
	}
	err := s.each(ctx, `SELECT source, destination, state, failures, until, last_error, changed_at FROM lanes`, func(rows *sql.Rows) error {
		var (
			l              inbox.Lane
			state, lastErr string
			failures       int
			until, changed int64
		)
		if err := rows.Scan(&l.Source, &l.Destination, &state, &failures, &until, &lastErr, &changed); err != nil {
			return err
		}
		st := get(l)
		st.State, st.Failures, st.Until, st.LastError, st.Changed = state, failures, fromNanos(until), lastErr, fromNanos(changed)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = s.each(ctx, `SELECT source, destination, count(*) FROM deliveries INDEXED BY deliveries_due
		WHERE status = 'pending' GROUP BY source, destination`, func(rows *sql.Rows) error {
		var (
			l inbox.Lane
			n int
		)
		if err := rows.Scan(&l.Source, &l.Destination, &n); err != nil {
			return err
		}
		get(l).Pending = n
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]inbox.LaneState, 0, len(byLane))
	for _, st := range byLane {
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b inbox.LaneState) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Destination, b.Destination))
	})
	return out, nil
}

// each runs query and calls fn for every row.
func (s *Store) each(ctx context.Context, query string, fn func(*sql.Rows) error) error {
	rows, err := s.db.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// intakeCounts tallies one Accept batch's outcomes by source: accepted and
// duplicate.
type intakeCounts map[string]*[2]int64

// add counts one claim outcome of an event of source; in-flight claims are
// neither accepted nor duplicates yet.
func (c intakeCounts) add(source string, status dedupe.Status) {
	var i int
	switch status {
	case dedupe.New:
		i = 0
	case dedupe.Duplicate:
		i = 1
	default:
		return
	}
	n := c[source]
	if n == nil {
		n = new([2]int64)
		c[source] = n
	}
	n[i]++
}

// save adds the tallies to the counters table, and the accepted events to
// the received count of status_counts, one statement each.
func (c intakeCounts) save(ctx context.Context, tx *sql.Tx) error {
	if len(c) == 0 {
		return nil
	}
	tuples := make([]string, 0, len(c))
	args := make([]any, 0, 3*len(c))
	for source, n := range c {
		tuples = append(tuples, "(?, ?, ?)")
		args = append(args, source, n[0], n[1])
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO counters (source, accepted, duplicates) VALUES `+
		strings.Join(tuples, ", ")+` ON CONFLICT (source) DO UPDATE SET
		accepted = accepted + excluded.accepted, duplicates = duplicates + excluded.duplicates`, args...)
	if err != nil {
		return err
	}
	tuples, args = tuples[:0], args[:0]
	for source, n := range c {
		if n[0] > 0 {
			tuples = append(tuples, "(?, 'received', ?)")
			args = append(args, source, n[0])
		}
	}
	if len(tuples) == 0 {
		return nil
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO status_counts (source, status, n) VALUES `+
		strings.Join(tuples, ", ")+` ON CONFLICT (source, status) DO UPDATE SET n = n + excluded.n`, args...)
	return err
}
