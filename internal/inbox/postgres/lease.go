package postgres

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookgate/hookgate/internal/inbox"
)

// leaseQuery takes the due events in one statement. The inner SELECT walks
// the partial index inbox_events_due in id order; FOR UPDATE SKIP LOCKED
// passes over the rows another leaser is taking, so concurrent leasers, on
// any node, each get different events without waiting for each other. A
// row another leaser changed after this statement's snapshot is checked
// again at its newest version, so a lease just taken is not taken twice.
var leaseQuery = `WITH clock AS (SELECT coalesce($1::timestamptz, now()) AS now),
due AS (
	SELECT id FROM inbox_events, clock
	WHERE status IN ('received', 'retry')
	  AND (status = 'received' OR next_attempt_at <= clock.now)
	  AND lease_until <= clock.now
	ORDER BY id LIMIT $4
	FOR UPDATE OF inbox_events SKIP LOCKED
)
UPDATE inbox_events e SET lease_owner = $2, lease_until = clock.now + $3::bigint * interval '1 microsecond',
	attempts = attempts + 1
FROM due, clock WHERE e.id = due.id
RETURNING ` + eventColumns

// Lease implements inbox.Store.
func (s *Store) Lease(ctx context.Context, owner string, n int, d time.Duration) ([]inbox.Event, error) {
	if err := inbox.CheckLease(owner); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, leaseQuery, s.clock(), owner, micros(d), n)
	if err != nil {
		return nil, inbox.Fail(ctx, "lease", err)
	}
	events, err := collectEvents(rows)
	if err != nil {
		return nil, inbox.Fail(ctx, "lease", err)
	}
	slices.SortFunc(events, func(a, b inbox.Event) int { return cmp.Compare(a.ID, b.ID) })
	return events, nil
}

// finishQuery ends the processing attempts of events still leased by $2.
// held locks them in id order, so two transactions finishing overlapping
// events wait for each other instead of deadlocking, and it keeps each
// one's status before the update for the counts.
const finishQuery = finishWith + finishSet + `
FROM r JOIN held ON held.id = r.id, clock
WHERE e.id = r.id
RETURNING e.id, e.source, held.status`

// finishApplyQuery is finishQuery that also records Apply's results, one
// element of $7..$12 per event ([records]), on the events it finishes: an
// event's row gets one new version for both.
const finishApplyQuery = finishWith + `, a AS (
	SELECT * FROM unnest($7::bigint[], $8::text[], $9::text[], $10::text[], $11::boolean[], $12::boolean[])
	AS a(id, outcome, from_state, to_state, transition, tie)
)` + finishSet + `,
	apply_outcome = coalesce(a.outcome, e.apply_outcome), apply_from = coalesce(a.from_state, e.apply_from),
	apply_to = coalesce(a.to_state, e.apply_to), apply_transition = coalesce(a.transition, e.apply_transition),
	apply_tie = coalesce(a.tie, e.apply_tie)
FROM r JOIN held ON held.id = r.id LEFT JOIN a ON a.id = r.id, clock
WHERE e.id = r.id
RETURNING e.id, e.source, held.status`

const finishWith = `WITH clock AS (SELECT coalesce($1::timestamptz, now()) AS now),
r AS (
	SELECT * FROM unnest($3::bigint[], $4::text[], $5::timestamptz[], $6::text[])
	AS r(id, status, next_attempt_at, last_error)
), held AS (
	SELECT id, status FROM inbox_events
	WHERE id = ANY($3) AND lease_owner = $2
	ORDER BY id FOR UPDATE
)`

const finishSet = `
UPDATE inbox_events e SET status = r.status, next_attempt_at = r.next_attempt_at, last_error = r.last_error,
	processed_at = CASE WHEN r.status = 'processed' THEN clock.now ELSE '-infinity' END,
	dead_at = CASE WHEN r.status = 'dead' THEN clock.now ELSE '-infinity' END,
	lease_owner = '', lease_until = '-infinity'`

// openDeliveries gives each (event, destination) pair a pending delivery,
// unless it has one: a delivery already made by an earlier run stays.
const openDeliveries = `INSERT INTO inbox_deliveries (event_id, destination, source, status, order_key, ord)
	SELECT e.id, d.destination, e.source, 'pending', d.key, e.entity_order
	FROM unnest($1::bigint[], $2::text[], $3::text[]) AS d(id, destination, key) JOIN inbox_events e ON e.id = d.id
	ORDER BY e.id, d.destination
	ON CONFLICT (event_id, destination) DO NOTHING
	RETURNING event_id`

// Finish implements inbox.Store. A processed event with destinations
// becomes delivering, with a pending delivery per destination it has not
// yet had; one without (or whose deliveries all ended already) is settled
// at once. A processed event gets ProcessedAt = now; NextAttemptAt is kept
// only for a retry.
func (s *Store) Finish(ctx context.Context, owner string, results []inbox.Result) error {
	if err := inbox.CheckFinish(owner, results); err != nil {
		return err
	}
	if len(results) == 0 {
		return nil
	}
	var lost []int64
	err := s.tx(ctx, "finish", func(tx pgx.Tx) error {
		var err error
		lost, err = s.finish(ctx, tx, owner, results, nil)
		return err
	})
	if err != nil {
		return err
	}
	return inbox.Lost(lost)
}

// finish records results in tx (see Finish), and rec, Apply's results to
// record, when not nil; it returns the events owner no longer holds.
func (s *Store) finish(ctx context.Context, tx pgx.Tx, owner string, results []inbox.Result, rec *records) ([]int64, error) {
	n := len(results)
	ids, statuses, nexts, errs := make([]int64, n), make([]string, n), make([]pgtype.Timestamptz, n), make([]string, n)
	var pairIDs []int64
	var pairDests, pairKeys []string
	status := make(map[int64]inbox.Status, n)
	for i, r := range results {
		st, next := r.Status, time.Time{}
		switch {
		case r.Status == inbox.StatusRetry:
			next = r.NextAttemptAt
		case r.Status == inbox.StatusProcessed && len(r.Destinations) > 0:
			st = inbox.StatusDelivering
			for _, d := range r.Destinations {
				pairIDs, pairDests, pairKeys = append(pairIDs, r.ID), append(pairDests, d), append(pairKeys, r.OrderKeys[d])
			}
		}
		ids[i], statuses[i], nexts[i], errs[i] = r.ID, string(st), ts(next), text(r.Error)
		status[r.ID] = st
	}
	query, args := finishQuery, []any{s.clock(), owner, ids, statuses, nexts, errs}
	if rec != nil {
		query, args = finishApplyQuery, append(args, rec.ids, rec.outcomes, rec.froms, rec.tos, rec.transitions, rec.ties)
	}
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	moves := counts{}
	ended := map[int64]bool{}
	var delivering []int64
	for rows.Next() {
		var (
			id          int64
			source, was string
		)
		if err := rows.Scan(&id, &source, &was); err != nil {
			rows.Close()
			return nil, err
		}
		ended[id] = true
		moves.move(source, inbox.Status(was), status[id])
		if status[id] == inbox.StatusDelivering {
			delivering = append(delivering, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var lost []int64
	for _, id := range ids {
		if !ended[id] {
			lost = append(lost, id)
		}
	}
	if rec != nil {
		// The results of events this did not finish are recorded apart:
		// a worker that takes a lost event over reads them.
		if err := rec.without(ended).save(ctx, tx); err != nil {
			return nil, err
		}
	}
	if err := moves.save(ctx, tx); err != nil {
		return nil, err
	}
	if len(delivering) == 0 {
		return lost, nil
	}
	var openIDs []int64
	var openDests, openKeys []string
	ordered := false
	for i, id := range pairIDs {
		if ended[id] {
			openIDs, openDests, openKeys = append(openIDs, id), append(openDests, pairDests[i]), append(openKeys, pairKeys[i])
			ordered = ordered || pairKeys[i] != ""
		}
	}
	rows, err = tx.Query(ctx, openDeliveries, openIDs, openDests, openKeys)
	if err != nil {
		return nil, err
	}
	opened, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	if ordered {
		if _, err := tx.Exec(ctx, openKeysQuery, openIDs, openDests, openKeys); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, unblockKeys, openIDs, openDests, openKeys); err != nil {
			return nil, err
		}
	}
	// An event with a delivery opened here has it pending; one whose
	// deliveries all existed before may have nothing left to deliver.
	unopened := slices.DeleteFunc(delivering, func(id int64) bool { return slices.Contains(opened, id) })
	_, err = s.settle(ctx, tx, unopened)
	return lost, err
}

// settleQuery finishes the delivering events among $2 none of whose
// deliveries is pending: processed when none failed, dead otherwise, with
// each failed destination's error, by destination name.
//
// It finds the events by id, and aggregates the deliveries once
// (MATERIALIZED). Planned from statistics that counted few delivering
// events (an ANALYZE at a quiet moment), the statement walked every
// delivering event, by the status indexes, and ran the aggregate again
// for each: 100 ms a settle with thousands in flight, which made more
// of them pile up. The status is joined to an empty string before it is
// compared, so that no status index can serve the walk, and the primary
// key is the only way in.
const settleQuery = `WITH clock AS (SELECT coalesce($1::timestamptz, now()) AS now),
agg AS MATERIALIZED (
	SELECT event_id,
		count(*) FILTER (WHERE status = 'pending') AS pending,
		count(*) FILTER (WHERE status = 'failed') AS failed,
		string_agg(destination || ': ' || error, '; ' ORDER BY destination) FILTER (WHERE status = 'failed') AS reason
	FROM inbox_deliveries WHERE event_id = ANY($2) GROUP BY event_id
)
UPDATE inbox_events e SET
	status = CASE WHEN agg.failed > 0 THEN 'dead' ELSE 'processed' END,
	last_error = coalesce(agg.reason, ''),
	processed_at = CASE WHEN agg.failed > 0 THEN '-infinity' ELSE clock.now END,
	dead_at = CASE WHEN agg.failed > 0 THEN clock.now ELSE '-infinity' END
FROM agg, clock
WHERE e.id = ANY($2) AND e.id = agg.event_id AND agg.pending = 0 AND e.status || '' = 'delivering'
RETURNING e.id, e.source, e.status, e.last_error`

// settle settles the events ids whose last open delivery ended, in tx,
// and returns them. The caller holds the events' row locks, taken before
// it changed their deliveries: two transactions ending an event's last
// two deliveries then take turns, and the second, whose statements start
// after the first committed, sees both deliveries ended. Without the lock
// each would see the other's delivery still pending and the event would
// stay delivering.
func (s *Store) settle(ctx context.Context, tx pgx.Tx, ids []int64) ([]inbox.Settled, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, settleQuery, s.clock(), ids)
	if err != nil {
		return nil, err
	}
	var out []inbox.Settled
	moves := counts{}
	for rows.Next() {
		var st inbox.Settled
		var status string
		if err := rows.Scan(&st.ID, &st.Source, &status, &st.Error); err != nil {
			rows.Close()
			return nil, err
		}
		st.Status = inbox.Status(status)
		moves.move(st.Source, inbox.StatusDelivering, st.Status)
		out = append(out, st)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, moves.save(ctx, tx)
}
