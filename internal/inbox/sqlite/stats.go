package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

// Stats implements inbox.Store. Pending events (received, retry) are
// counted in the partial index events_due, the other statuses come from
// status_counts, which triggers keep in step with the events table; the
// intake counters from the counters table. The reads run outside any
// transaction, so under load they may be a moment apart.
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
		return inbox.Stats{}, inbox.Fail(ctx, "stats", err)
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
		return inbox.Stats{}, inbox.Fail(ctx, "stats", err)
	}
	var oldest, delivering sql.NullInt64
	err = s.each(ctx, pendingQuery, func(rows *sql.Rows) error {
		var (
			name, status string
			n            int
			first        int64
		)
		if err := rows.Scan(&name, &status, &n, &first); err != nil {
			return err
		}
		ss := source(name)
		ss.ByStatus[inbox.Status(status)] = n
		st.Sources[name] = ss
		st.Pending += n
		if !oldest.Valid || first < oldest.Int64 {
			oldest = sql.NullInt64{Int64: first, Valid: true}
		}
		return nil
	})
	if err != nil {
		return inbox.Stats{}, inbox.Fail(ctx, "stats", err)
	}
	if err := s.db.QueryRowContext(ctx, oldestDelivering).Scan(&delivering); err != nil {
		return inbox.Stats{}, inbox.Fail(ctx, "stats", err)
	}
	for _, ss := range st.Sources {
		st.Pending += ss.ByStatus[inbox.StatusDelivering]
	}
	if delivering.Valid && (!oldest.Valid || delivering.Int64 < oldest.Int64) {
		oldest = delivering
	}
	st.OldestPending = fromNanos(oldest.Int64)
	if st.Lanes, err = s.lanes(ctx); err != nil {
		return inbox.Stats{}, inbox.Fail(ctx, "stats", err)
	}
	return st, nil
}

// pendingQuery counts the events waiting for a worker, by source and
// status, and finds the oldest of each, within the partial index
// events_due, which covers it: its cost grows with the events pending, not
// with all the events kept.
const pendingQuery = `SELECT source, status, count(*), min(received_at) FROM events INDEXED BY events_due
	WHERE status IN ('received', 'retry') GROUP BY source, status`

// oldestDelivering is when the oldest delivering event was received: ids
// grow with arrival, so it is the one with the least id, the first entry
// of events_status for the status.
const oldestDelivering = `SELECT received_at FROM events
	WHERE id = (SELECT min(id) FROM events WHERE status = 'delivering')
	UNION ALL SELECT NULL LIMIT 1`

// lanes returns the recorded lane states and the pending deliveries per
// lane, by source then destination.
func (s *Store) lanes(ctx context.Context) ([]inbox.LaneState, error) {
	byLane := inbox.LaneStates{}
	err := s.each(ctx, `SELECT source, destination, state, failures, until, last_error, changed_at, held FROM lanes`, func(rows *sql.Rows) error {
		var (
			l              inbox.Lane
			state, lastErr string
			failures       int
			until, changed int64
			held           bool
		)
		if err := rows.Scan(&l.Source, &l.Destination, &state, &failures, &until, &lastErr, &changed, &held); err != nil {
			return err
		}
		st := byLane.Get(l)
		st.State, st.Failures, st.Until, st.LastError, st.Changed = state, failures, fromNanos(until), lastErr, fromNanos(changed)
		st.Held = held
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
		byLane.Get(l).Pending = n
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = s.each(ctx, `SELECT source, destination, count(*) FROM order_keys INDEXED BY order_keys_blocked
		WHERE blocked > 0 GROUP BY source, destination`, func(rows *sql.Rows) error {
		var (
			l inbox.Lane
			n int
		)
		if err := rows.Scan(&l.Source, &l.Destination, &n); err != nil {
			return err
		}
		byLane.Get(l).Blocked = n
		return nil
	})
	if err != nil {
		return nil, err
	}
	return byLane.Sorted(), nil
}

// each runs query with args and calls fn for every row.
func (s *Store) each(ctx context.Context, query string, fn func(*sql.Rows) error, args ...any) error {
	rows, err := s.db.QueryContext(ctx, query, args...)
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
	c.addN(source, i, 1)
}

func (c intakeCounts) addN(source string, i int, n int64) {
	p := c[source]
	if p == nil {
		p = new([2]int64)
		c[source] = p
	}
	p[i] += n
}

// countersQuery adds a batch's tallies, given as one JSON array of
// [source, accepted, duplicates], to the counters table, in the batch's
// transaction, so the counts commit (or vanish) with the events they
// count, and every node on the file reads them at once. Its text is the
// same for any number of sources, so it is prepared once, and it writes
// one page, the counters row of the batch's source, which the batch's
// commit appends to the WAL with the pages of its events and keys.
const countersQuery = `INSERT INTO counters (source, accepted, duplicates)
	SELECT value->>0, value->>1, value->>2 FROM json_each(?) WHERE true
	ON CONFLICT (source) DO UPDATE SET
	accepted = accepted + excluded.accepted, duplicates = duplicates + excluded.duplicates`

// duplicatesQuery adds the duplicates of a batch's tallies (the same JSON
// array as countersQuery's) to the row of their minute, the first
// argument, in duplicates_by_minute. save runs it only for a batch that
// answered duplicates, so a batch of new events writes no more than
// before.
const duplicatesQuery = `INSERT INTO duplicates_by_minute (minute, source, n)
	SELECT ?, value->>0, value->>2 FROM json_each(?) WHERE value->>2 > 0
	ON CONFLICT (minute, source) DO UPDATE SET n = n + excluded.n`

// save adds the tallies to the counters table in tx, and the duplicates
// among them to the minute of at (Unix nanoseconds).
func (c intakeCounts) save(ctx context.Context, db *sqlitedb.DB, tx *sql.Tx, at int64) error {
	if len(c) == 0 {
		return nil
	}
	rows := make([][3]any, 0, len(c))
	duplicates := false
	for source, n := range c {
		rows = append(rows, [3]any{source, n[0], n[1]})
		duplicates = duplicates || n[1] > 0
	}
	arg, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	st, err := db.Stmt(ctx, tx, countersQuery)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err = st.ExecContext(ctx, string(arg)); err != nil || !duplicates {
		return err
	}
	dup, err := db.Stmt(ctx, tx, duplicatesQuery)
	if err != nil {
		return err
	}
	defer dup.Close()
	_, err = dup.ExecContext(ctx, at/int64(time.Minute), string(arg))
	return err
}
