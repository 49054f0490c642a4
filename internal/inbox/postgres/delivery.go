package postgres

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookgate/hookgate/internal/inbox"
)

// deliveryColumns are what scanDelivery reads.
const deliveryColumns = `event_id, destination, status, attempts, next_attempt_at, code, error, at, order_key, seq, skipped`

// Deliveries implements inbox.Store. Events without a delivery are absent
// from the map.
func (s *Store) Deliveries(ctx context.Context, ids []int64) (map[int64]map[string]inbox.Delivery, error) {
	out := map[int64]map[string]inbox.Delivery{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM inbox_deliveries WHERE event_id = ANY($1)`, ids)
	if err != nil {
		return nil, inbox.Fail(ctx, "deliveries", err)
	}
	defer rows.Close()
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, inbox.Fail(ctx, "deliveries", err)
		}
		if out[d.EventID] == nil {
			out[d.EventID] = map[string]inbox.Delivery{}
		}
		out[d.EventID][d.Destination] = d
	}
	if err := rows.Err(); err != nil {
		return nil, inbox.Fail(ctx, "deliveries", err)
	}
	return out, nil
}

// scanDelivery reads deliveryColumns, followed by extra destinations.
func scanDelivery(row pgx.Row, extra ...any) (inbox.Delivery, error) {
	var (
		d        inbox.Delivery
		status   string
		next, at pgtype.Timestamptz
	)
	err := row.Scan(append([]any{&d.EventID, &d.Destination, &status, &d.Attempts, &next, &d.Code, &d.Error, &at,
		&d.OrderKey, &d.Sequence, &d.Skipped}, extra...)...)
	d.Status, d.NextAttemptAt, d.At = inbox.DeliveryStatus(status), fromTS(next), fromTS(at)
	return d, err
}

// Dispatch implements inbox.Store. A lane's dispatcher calls it each time
// attempts end or slots free up, so one transaction records what finished
// and takes what is due next.
func (s *Store) Dispatch(ctx context.Context, owner string, lane inbox.Lane, done []inbox.Done, n int, d time.Duration) (inbox.Dispatched, error) {
	return s.dispatch(ctx, owner, lane, done, n, d, nil)
}

// dispatch records done and then, when n > 0, leases up to n deliveries
// for d (each the head of its key when the lane is ordered, no more than
// the lane's schedule has slots when it is rated), in one transaction.
func (s *Store) dispatch(ctx context.Context, owner string, lane inbox.Lane, done []inbox.Done, n int, d time.Duration, rl *inbox.RateLimit) (inbox.Dispatched, error) {
	if err := inbox.CheckDispatch(owner, done); err != nil {
		return inbox.Dispatched{}, err
	}
	rated := rl != nil && rl.Rate.Events > 0
	if len(done) == 0 && n <= 0 && (!rated || rl.Hold.IsZero()) {
		return inbox.Dispatched{}, nil
	}
	var out inbox.Dispatched
	err := s.tx(ctx, "dispatch", func(tx pgx.Tx) error {
		out = inbox.Dispatched{}
		if err := s.recordDone(ctx, tx, owner, done, &out); err != nil {
			return err
		}
		lease := func(n int) (int, error) {
			var err error
			if rl != nil && rl.Ordered {
				out.Tasks, err = s.leaseOrdered(ctx, tx, owner, lane, n, d)
			} else {
				out.Tasks, err = s.leaseDeliveries(ctx, tx, owner, lane, n, d, false)
			}
			return len(out.Tasks), err
		}
		if rated {
			return s.leaseRated(ctx, tx, lane, *rl, n, lease, &out)
		}
		if n <= 0 {
			return nil
		}
		_, err := lease(n)
		return err
	})
	if err != nil {
		return inbox.Dispatched{}, err
	}
	return out, nil
}

// recordQuery logs the attempts ($2..$9, one element each) in their order
// and updates the deliveries that $10 still leases, each by its first
// attempt there, returning those.
const recordQuery = `WITH clock AS (SELECT coalesce($1::timestamptz, now()) AS now),
a AS (
	SELECT * FROM unnest($2::bigint[], $3::text[], $4::timestamptz[], $5::bigint[], $6::integer[],
		$7::text[], $8::text[], $9::text[], $11::timestamptz[]) WITH ORDINALITY
	AS a(event_id, destination, at, duration, code, error, body, status, next_attempt_at, ord)
), logged AS (
	INSERT INTO inbox_attempts (event_id, destination, at, duration, code, error, body)
	SELECT a.event_id, a.destination, CASE WHEN a.at = '-infinity' THEN clock.now ELSE a.at END,
		a.duration, a.code, a.error, a.body
	FROM a, clock ORDER BY a.ord
)
UPDATE inbox_deliveries d SET status = a.status, attempts = d.attempts + 1, next_attempt_at = a.next_attempt_at,
	code = a.code, error = a.error, at = CASE WHEN a.at = '-infinity' THEN clock.now ELSE a.at END,
	lease_owner = '', lease_until = '-infinity'
FROM (SELECT DISTINCT ON (event_id, destination) * FROM a ORDER BY event_id, destination, ord) a, clock
WHERE d.event_id = a.event_id AND d.destination = a.destination AND d.lease_owner = $10 AND d.status = 'pending'
RETURNING d.event_id, d.destination, d.source, d.order_key`

// recordDone records finished attempts: each goes to the attempt log; the
// ones whose delivery owner still leases update it and may settle their
// event.
func (s *Store) recordDone(ctx context.Context, tx pgx.Tx, owner string, done []inbox.Done, out *inbox.Dispatched) error {
	if len(done) == 0 {
		return nil
	}
	n := len(done)
	var (
		ids                         = make([]int64, n)
		dests, errs, bodies, states = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		ats, nexts                  = make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n)
		durations                   = make([]int64, n)
		codes                       = make([]int32, n)
	)
	for i, dn := range done {
		a := dn.Attempt
		var next time.Time
		if dn.Status == inbox.DeliveryPending {
			next = dn.NextAttemptAt
		}
		ids[i], dests[i], ats[i], durations[i], codes[i] = a.EventID, a.Destination, ts(a.At), int64(a.Duration), int32(a.Code)
		errs[i], bodies[i], states[i], nexts[i] = text(a.Error), text(a.Body), string(dn.Status), ts(next)
	}
	// Lock the events first, in id order, as Finish and Replay do before
	// they touch deliveries: settle needs the locks (see there), and one
	// order of events before deliveries everywhere keeps a late attempt's
	// record and a replay of its event from deadlocking.
	if _, err := tx.Exec(ctx, `SELECT id FROM inbox_events WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, recordQuery, s.clock(), ids, dests, ats, durations, codes, errs, bodies, states, owner, nexts)
	if err != nil {
		return err
	}
	type delivery struct {
		id   int64
		dest string
	}
	type order struct{ source, key string }
	updated := map[delivery]order{}
	for rows.Next() {
		var (
			d delivery
			o order
		)
		if err := rows.Scan(&d.id, &d.dest, &o.source, &o.key); err != nil {
			rows.Close()
			return err
		}
		updated[d] = o
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var (
		ended    []int64
		released keyRelease
	)
	// A delivery's first attempt in done ends its lease (the update takes
	// only that one), so a second one finds it no longer leased: lost, as
	// when it is recorded apart.
	seen := make(map[delivery]bool, n)
	for i, dn := range done {
		d := delivery{ids[i], dests[i]}
		o, ok := updated[d]
		if !ok || seen[d] {
			out.Lost = append(out.Lost, ids[i])
			continue
		}
		seen[d] = true
		if o.key != "" {
			released.add(o.source, o.key, dn)
		}
		if dn.Status != inbox.DeliveryPending && !slices.Contains(ended, ids[i]) {
			ended = append(ended, ids[i])
		}
	}
	if err := released.exec(ctx, tx, owner); err != nil {
		return err
	}
	if len(ended) == 0 {
		return nil
	}
	settled, err := s.settle(ctx, tx, ended)
	if err != nil {
		return err
	}
	// Report them in the order their attempts were handed in.
	slices.SortFunc(settled, func(a, b inbox.Settled) int {
		return cmp.Compare(slices.Index(ended, a.ID), slices.Index(ended, b.ID))
	})
	out.Settled = append(out.Settled, settled...)
	return nil
}

// laneLease takes a lane's due deliveries and reads their events in one
// statement. The inner SELECT walks the partial index inbox_deliveries_due
// within the lane, soonest due first, and skips rows another dispatcher is
// locking, as leaseQuery does for events. It takes none while an operator
// holds the lane: the test names no row of the walk, so the planner makes
// it a one-time filter, and a held lane's walk does not start. The UPDATE
// finds the rows the walk locked by their ctid: joined on the key
// instead, a generic plan made while the table was small joined them to
// a scan of every delivery, and kept doing so for every lease (29 ms
// each at 9,000 rows) until the table was analyzed.
var laneLease = `WITH clock AS (SELECT coalesce($1::timestamptz, now()) AS now),
due AS (
	SELECT inbox_deliveries.ctid, event_id FROM inbox_deliveries, clock
	WHERE status = 'pending' AND source = $2 AND destination = $3
	  AND next_attempt_at <= clock.now AND lease_until <= clock.now
	  AND NOT EXISTS (SELECT 1 FROM inbox_lanes WHERE source = $2 AND destination = $3 AND held)
	ORDER BY next_attempt_at, event_id LIMIT $6
	FOR UPDATE OF inbox_deliveries SKIP LOCKED
), leased AS (
	UPDATE inbox_deliveries d SET lease_owner = $4, lease_until = clock.now + $5::bigint * interval '1 microsecond'
	FROM clock WHERE d.ctid = ANY (ARRAY(SELECT ctid FROM due))
	RETURNING d.event_id, d.destination, d.status, d.attempts, d.next_attempt_at, d.code, d.error, d.at
)
SELECT ` + eventColumns + `, l.event_id, l.destination, l.status, l.attempts, l.next_attempt_at, l.code, l.error, l.at
FROM leased l JOIN inbox_events e ON e.id = l.event_id
ORDER BY e.id`

// laneLeaseUnkeyed is laneLease for the deliveries of an ordered lane
// that have no order key: made before the destination was ordered.
var laneLeaseUnkeyed = strings.Replace(laneLease, "AND lease_until <= clock.now", "AND lease_until <= clock.now AND order_key = ''", 1)

// leaseDeliveries leases up to n due deliveries of lane for d and returns
// them with their events, in event id order; unkeyed limits it to
// deliveries without an order key.
func (s *Store) leaseDeliveries(ctx context.Context, tx pgx.Tx, owner string, lane inbox.Lane, n int, d time.Duration, unkeyed bool) ([]inbox.Task, error) {
	query := laneLease
	if unkeyed {
		query = laneLeaseUnkeyed
	}
	rows, err := tx.Query(ctx, query, s.clock(), lane.Source, lane.Destination, owner, micros(d), n)
	if err != nil {
		return nil, err
	}
	return collectTasks(rows, false)
}

// collectTasks reads the rows of a lease: an event's columns, then its
// delivery's (with ordered, its order key, position and skips).
func collectTasks(rows pgx.Rows, ordered bool) ([]inbox.Task, error) {
	defer rows.Close()
	var tasks []inbox.Task
	for rows.Next() {
		var t inbox.Task
		var (
			status   string
			next, at pgtype.Timestamptz
		)
		dl := &t.Delivery
		dest := []any{&dl.EventID, &dl.Destination, &status, &dl.Attempts, &next, &dl.Code, &dl.Error, &at}
		if ordered {
			dest = append(dest, &dl.OrderKey, &dl.Sequence, &dl.Skipped)
		}
		e, err := scanEvent(rows, dest...)
		if err != nil {
			return nil, err
		}
		t.Event = e
		dl.Status, dl.NextAttemptAt, dl.At = inbox.DeliveryStatus(status), fromTS(next), fromTS(at)
		tasks = append(tasks, t)
	}
	return tasks, rows.Err()
}

// Attempts implements inbox.Store.
func (s *Store) Attempts(ctx context.Context, id int64) ([]inbox.Attempt, error) {
	rows, err := s.pool.Query(ctx, `SELECT destination, at, duration, code, error, body
		FROM inbox_attempts WHERE event_id = $1 ORDER BY seq`, id)
	if err != nil {
		return nil, inbox.Fail(ctx, "attempts", err)
	}
	defer rows.Close()
	var out []inbox.Attempt
	for rows.Next() {
		a := inbox.Attempt{EventID: id}
		var (
			at  pgtype.Timestamptz
			dur int64
		)
		if err := rows.Scan(&a.Destination, &at, &dur, &a.Code, &a.Error, &a.Body); err != nil {
			return nil, inbox.Fail(ctx, "attempts", err)
		}
		a.At, a.Duration = fromTS(at), time.Duration(dur)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, inbox.Fail(ctx, "attempts", err)
	}
	return out, nil
}

// SetLaneState implements inbox.Store.
func (s *Store) SetLaneState(ctx context.Context, st inbox.LaneState) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO inbox_lanes
		(source, destination, state, failures, until, last_error, changed_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (source, destination) DO UPDATE SET state = excluded.state, failures = excluded.failures,
		until = excluded.until, last_error = excluded.last_error, changed_at = excluded.changed_at`,
		st.Source, st.Destination, st.State, st.Failures, ts(st.Until), text(st.LastError), ts(st.Changed))
	if err != nil {
		return inbox.Fail(ctx, "lane state", err)
	}
	return nil
}
