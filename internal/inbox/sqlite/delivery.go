package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

// Deliveries implements inbox.Store. Events without a delivery are absent
// from the map.
func (s *Store) Deliveries(ctx context.Context, ids []int64) (map[int64]map[string]inbox.Delivery, error) {
	out := map[int64]map[string]inbox.Delivery{}
	for lo := 0; lo < len(ids); lo += idChunk {
		chunk := ids[lo:min(lo+idChunk, len(ids))]
		if err := s.readDeliveries(ctx, chunk, out); err != nil {
			return nil, inbox.Fail(ctx, "deliveries", err)
		}
	}
	return out, nil
}

func (s *Store) readDeliveries(ctx context.Context, ids []int64, out map[int64]map[string]inbox.Delivery) error {
	rows, err := s.db.QueryContext(ctx, `SELECT `+deliveryFields+`
		FROM deliveries WHERE event_id IN (`+placeholders(len(ids))+`)`, int64Args(ids)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return err
		}
		if out[d.EventID] == nil {
			out[d.EventID] = map[string]inbox.Delivery{}
		}
		out[d.EventID][d.Destination] = d
	}
	return rows.Err()
}

// scanDelivery reads deliveryFields.
func scanDelivery(row interface{ Scan(...any) error }) (inbox.Delivery, error) {
	var (
		d        inbox.Delivery
		status   string
		next, at int64
	)
	err := row.Scan(&d.EventID, &d.Destination, &status, &d.Attempts, &next, &d.Code, &d.Error, &at,
		&d.OrderKey, &d.Sequence, &d.Skipped)
	d.Status, d.NextAttemptAt, d.At = inbox.DeliveryStatus(status), fromNanos(next), fromNanos(at)
	return d, err
}

// Dispatch implements inbox.Store. A lane's dispatcher calls it each time
// attempts end or slots free up, so one write transaction records what
// finished and takes what is due next.
func (s *Store) Dispatch(ctx context.Context, owner string, lane inbox.Lane, done []inbox.Done, n int, d time.Duration) (inbox.Dispatched, error) {
	return s.dispatch(ctx, owner, lane, done, n, d, nil)
}

// dispatch records done and then, when n > 0, leases up to n deliveries
// for d (each the head of its key when the lane is ordered, no more than
// the lane's schedule has slots when it is rated), in one write
// transaction.
func (s *Store) dispatch(ctx context.Context, owner string, lane inbox.Lane, done []inbox.Done, n int, d time.Duration, rl *inbox.RateLimit) (inbox.Dispatched, error) {
	if err := inbox.CheckDispatch(owner, done); err != nil {
		return inbox.Dispatched{}, err
	}
	var out inbox.Dispatched
	err := s.write(ctx, "dispatch", func(tx *sql.Tx) error {
		out = inbox.Dispatched{}
		now := s.now().UnixNano()
		if err := s.recordDone(ctx, tx, owner, done, now, &out); err != nil {
			return err
		}
		lease := func(n int) (int, error) {
			var err error
			until := sqlitedb.After(now, d)
			if rl != nil && rl.Ordered {
				out.Tasks, err = s.leaseOrdered(ctx, tx, owner, lane, n, now, until)
			} else {
				out.Tasks, err = s.leaseDeliveries(ctx, tx, owner, lane, n, now, until, false)
			}
			return len(out.Tasks), err
		}
		if rl != nil && rl.Rate.Events > 0 {
			return s.leaseRated(ctx, tx, lane, *rl, n, now, lease, &out)
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

// recordDone records finished attempts: each goes to the attempt log; the
// ones whose delivery owner still leases update it and may settle their
// event. Each of the three is a statement per chunk of attempts, not per
// attempt: a lane records its ended attempts several to a dispatch.
func (s *Store) recordDone(ctx context.Context, tx *sql.Tx, owner string, done []inbox.Done, now int64, out *inbox.Dispatched) error {
	if len(done) == 0 {
		return nil
	}
	// Each attempt's time is its own, or the dispatch's when it has none.
	done = slices.Clone(done)
	for i := range done {
		if done[i].Attempt.At.IsZero() {
			done[i].Attempt.At = time.Unix(0, now)
		}
	}
	if err := s.logAttempts(ctx, tx, done); err != nil {
		return err
	}
	// A delivery's first attempt in done ends its lease, so a second one
	// finds it no longer leased: lost, as when it is recorded apart.
	queued := make(map[delivery]bool, len(done))
	var firsts []inbox.Done
	for _, dn := range done {
		if d := deliveryOf(dn); !queued[d] {
			queued[d] = true
			firsts = append(firsts, dn)
		}
	}
	updated, err := s.updateDeliveries(ctx, tx, owner, firsts)
	if err != nil {
		return err
	}
	var ended []int64
	for _, dn := range done {
		d := deliveryOf(dn)
		o, ok := updated[d]
		if !ok {
			out.Lost = append(out.Lost, d.id)
			continue
		}
		delete(updated, d)
		if o.key != "" {
			if err := s.releaseKey(ctx, tx, inbox.Lane{Source: o.source, Destination: d.dest}, o.key, owner, dn); err != nil {
				return err
			}
		}
		if dn.Status != inbox.DeliveryPending && !slices.Contains(ended, d.id) {
			ended = append(ended, d.id)
		}
	}
	settled, err := s.settle(ctx, tx, ended, now)
	out.Settled = append(out.Settled, settled...)
	return err
}

// delivery names one delivery: its event and destination.
type delivery struct {
	id   int64
	dest string
}

// deliveryOf is the delivery dn is an attempt of.
func deliveryOf(dn inbox.Done) delivery {
	return delivery{dn.Attempt.EventID, dn.Attempt.Destination}
}

// ordering is a delivery's lane source and order key, "" in a lane
// without order.
type ordering struct{ source, key string }

// logAttempts adds done's attempts to the attempt log in their order.
func (s *Store) logAttempts(ctx context.Context, tx *sql.Tx, done []inbox.Done) error {
	for chunk := range sqlitedb.Chunks(done) {
		args := make([]any, 0, 7*len(chunk))
		for _, dn := range chunk {
			a := dn.Attempt
			args = append(args, a.EventID, a.Destination, nanos(a.At), int64(a.Duration), a.Code, a.Error, a.Body)
		}
		logged, err := s.db.Stmt(ctx, tx, `INSERT INTO attempts (event_id, destination, at, duration, code, error, body)
			VALUES `+sqlitedb.Rows("(?, ?, ?, ?, ?, ?, ?)", len(chunk)))
		if err != nil {
			return err
		}
		_, err = logged.ExecContext(ctx, args...)
		logged.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// updateDeliveries records the attempts done, one per delivery, on the
// deliveries owner still leases, and returns those it updated.
func (s *Store) updateDeliveries(ctx context.Context, tx *sql.Tx, owner string, done []inbox.Done) (map[delivery]ordering, error) {
	updated := make(map[delivery]ordering, len(done))
	for chunk := range sqlitedb.Chunks(done) {
		args := make([]any, 0, 7*len(chunk)+1)
		for _, dn := range chunk {
			var next int64
			if dn.Status == inbox.DeliveryPending {
				next = nanos(dn.NextAttemptAt)
			}
			a := dn.Attempt
			args = append(args, a.EventID, a.Destination, string(dn.Status), next, a.Code, a.Error, nanos(a.At))
		}
		args = append(args, owner)
		err := s.db.EachRow(ctx, tx, recordDeliveries(len(chunk)), args, func(rows *sql.Rows) error {
			var (
				d delivery
				o ordering
			)
			if err := rows.Scan(&d.id, &d.dest, &o.source, &o.key); err != nil {
				return err
			}
			updated[d] = o
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return updated, nil
}

// recordDeliveries is the update of k deliveries by their attempts: the
// rows are (event id, destination, status, next attempt, code, error,
// at), and the last argument is the lease owner.
func recordDeliveries(k int) string {
	return `UPDATE deliveries SET status = d.column3, attempts = attempts + 1,
		next_attempt_at = d.column4, code = d.column5, error = d.column6, at = d.column7, lease_owner = '', lease_until = 0
		FROM (VALUES ` + sqlitedb.Rows("(?, ?, ?, ?, ?, ?, ?)", k) + `) AS d
		WHERE event_id = d.column1 AND destination = d.column2 AND lease_owner = ? AND status = 'pending'
		RETURNING event_id, destination, source, order_key`
}

// settleQuery finishes the delivering events of a JSON array of ids none
// of whose deliveries is pending: processed when none failed, dead
// otherwise, with each failed destination's error in destination order.
// The arguments are the time twice, then the ids. "+status" keeps SQLite
// from walking every delivering event by events_status: it looks each
// event up by id.
const settleQuery = `UPDATE events SET
		status = CASE WHEN f.failed > 0 THEN 'dead' ELSE 'processed' END,
		last_error = coalesce(f.reason, ''),
		processed_at = CASE WHEN f.failed > 0 THEN 0 ELSE ? END,
		dead_at = CASE WHEN f.failed > 0 THEN ? ELSE 0 END
	FROM (SELECT event_id, sum(status = 'pending') AS pending, sum(status = 'failed') AS failed,
			group_concat(CASE WHEN status = 'failed' THEN destination || ': ' || error END, '; ' ORDER BY destination) AS reason
		FROM deliveries WHERE event_id IN (SELECT value FROM json_each(?)) GROUP BY event_id) AS f
	WHERE id = f.event_id AND f.pending = 0 AND +status = 'delivering'
	RETURNING id, source, status, last_error`

// settle finishes the delivering events ids none of whose deliveries is
// pending (settleQuery) and returns them in the order of ids; the others
// stay open.
func (s *Store) settle(ctx context.Context, tx *sql.Tx, ids []int64, now int64) ([]inbox.Settled, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []inbox.Settled
	err := s.db.EachRow(ctx, tx, settleQuery, []any{now, now, idList(ids)}, func(rows *sql.Rows) error {
		var (
			st     inbox.Settled
			status string
		)
		if err := rows.Scan(&st.ID, &st.Source, &status, &st.Error); err != nil {
			return err
		}
		st.Status = inbox.Status(status)
		out = append(out, st)
		return nil
	})
	slices.SortFunc(out, func(a, b inbox.Settled) int {
		return cmp.Compare(slices.Index(ids, a.ID), slices.Index(ids, b.ID))
	})
	return out, err
}

// laneLease takes a lane's due deliveries. Its inner SELECT walks the
// partial index deliveries_due within the lane, soonest due first, and
// repeats the index's WHERE clause, which SQLite needs to use it.
const laneLease = `UPDATE deliveries SET lease_owner = ?, lease_until = ?
	WHERE destination = ? AND event_id IN (SELECT event_id FROM deliveries INDEXED BY deliveries_due
		WHERE status = 'pending' AND source = ? AND destination = ?
		  AND next_attempt_at <= ? AND lease_until <= ?
		ORDER BY next_attempt_at, event_id LIMIT ?)
	RETURNING ` + deliveryFields

// laneLeaseUnkeyed is laneLease for the deliveries of an ordered lane
// that have no order key: made before the destination was ordered.
var laneLeaseUnkeyed = strings.Replace(laneLease, "AND lease_until <= ?", "AND lease_until <= ? AND order_key = ''", 1)

// deliveryFields are what scanDelivery reads.
const deliveryFields = `event_id, destination, status, attempts, next_attempt_at, code, error, at, order_key, seq, skipped`

// laneHeld reads whether an operator holds a lane (HoldLane).
const laneHeld = `SELECT held FROM lanes WHERE source = ? AND destination = ?`

// leaseDeliveries leases up to n due deliveries of lane until `until` and
// returns them with their events, in event id order; none while an
// operator holds the lane, which the transaction reads first. unkeyed
// limits it to deliveries without an order key (an ordered lane's
// deliveries from before it was ordered).
func (s *Store) leaseDeliveries(ctx context.Context, tx *sql.Tx, owner string, lane inbox.Lane, n int, now, until int64, unkeyed bool) ([]inbox.Task, error) {
	if held, err := s.laneHeld(ctx, tx, lane); err != nil || held {
		return nil, err
	}
	query := laneLease
	if unkeyed {
		query = laneLeaseUnkeyed
	}
	lease, err := s.db.Stmt(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	rows, err := lease.QueryContext(ctx, owner, until, lane.Destination, lane.Source, lane.Destination, now, now, n)
	if err != nil {
		return nil, err
	}
	var tasks []inbox.Task
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		tasks = append(tasks, inbox.Task{Delivery: d})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return s.withEvents(ctx, tx, tasks)
}

// laneHeld reports whether an operator holds lane.
func (s *Store) laneHeld(ctx context.Context, tx *sql.Tx, lane inbox.Lane) (bool, error) {
	held, err := s.db.Stmt(ctx, tx, laneHeld)
	if err != nil {
		return false, err
	}
	defer held.Close()
	var isHeld bool
	err = held.QueryRowContext(ctx, lane.Source, lane.Destination).Scan(&isHeld)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return isHeld, err
}

// withEvents sorts tasks by event id and reads their events into them.
func (s *Store) withEvents(ctx context.Context, tx *sql.Tx, tasks []inbox.Task) ([]inbox.Task, error) {
	if len(tasks) == 0 {
		return tasks, nil
	}
	slices.SortFunc(tasks, func(a, b inbox.Task) int { return cmp.Compare(a.Delivery.EventID, b.Delivery.EventID) })
	ids := make([]int64, len(tasks))
	for i, t := range tasks {
		ids[i] = t.Delivery.EventID
	}
	read, err := s.db.Stmt(ctx, tx, eventsByID)
	if err != nil {
		return nil, err
	}
	evs, err := read.QueryContext(ctx, idList(ids))
	if err != nil {
		return nil, err
	}
	defer evs.Close()
	i := 0
	for evs.Next() {
		e, err := scanEvent(evs)
		if err != nil {
			return nil, err
		}
		for i < len(tasks) && tasks[i].Delivery.EventID < e.ID {
			i++
		}
		if i < len(tasks) && tasks[i].Delivery.EventID == e.ID {
			tasks[i].Event = e
		}
	}
	return tasks, evs.Err()
}

// Attempts implements inbox.Store.
func (s *Store) Attempts(ctx context.Context, id int64) ([]inbox.Attempt, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT destination, at, duration, code, error, body
		FROM attempts WHERE event_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, inbox.Fail(ctx, "attempts", err)
	}
	defer rows.Close()
	var out []inbox.Attempt
	for rows.Next() {
		a := inbox.Attempt{EventID: id}
		var at, dur int64
		if err := rows.Scan(&a.Destination, &at, &dur, &a.Code, &a.Error, &a.Body); err != nil {
			return nil, inbox.Fail(ctx, "attempts", err)
		}
		a.At, a.Duration = fromNanos(at), time.Duration(dur)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, inbox.Fail(ctx, "attempts", err)
	}
	return out, nil
}

// SetLaneState implements inbox.Store.
func (s *Store) SetLaneState(ctx context.Context, st inbox.LaneState) error {
	return s.write(ctx, "lane state", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO lanes
			(source, destination, state, failures, until, last_error, changed_at) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (source, destination) DO UPDATE SET state = excluded.state, failures = excluded.failures,
			until = excluded.until, last_error = excluded.last_error, changed_at = excluded.changed_at`,
			st.Source, st.Destination, st.State, st.Failures, nanos(st.Until), st.LastError, nanos(st.Changed))
		return err
	})
}
