package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"maps"
	"slices"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

// leaseQuery takes the due events in one statement. Its inner SELECT walks
// the partial index events_due in id order and stops after n: it repeats
// the index's WHERE clause word for word, which SQLite needs to use a
// partial index, and names the index, since without statistics the planner
// prefers events_status and sorts.
const leaseQuery = `UPDATE events SET lease_owner = ?, lease_until = ?, attempts = attempts + 1
	WHERE id IN (SELECT id FROM events INDEXED BY events_due
		WHERE status IN ('received', 'retry')
		  AND (status = 'received' OR next_attempt_at <= ?)
		  AND lease_until <= ?
		ORDER BY id LIMIT ?)
	RETURNING ` + columns

// Lease implements inbox.Store. The events are chosen and marked in one
// write transaction, which SQLite runs one at a time across connections
// and processes, so no two leasers get the same event.
func (s *Store) Lease(ctx context.Context, owner string, n int, d time.Duration) ([]inbox.Event, error) {
	if err := inbox.CheckLease(owner); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	var events []inbox.Event
	err := s.process(ctx, "lease", func(tx *sql.Tx) error {
		events = events[:0]
		now := s.now().UnixNano()
		lease, err := s.db.Stmt(ctx, tx, leaseQuery)
		if err != nil {
			return err
		}
		rows, err := lease.QueryContext(ctx, owner, sqlitedb.After(now, d), now, now, n)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			e, err := scanEvent(rows)
			if err != nil {
				return err
			}
			events = append(events, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(events, func(a, b inbox.Event) int { return cmp.Compare(a.ID, b.ID) })
	return events, nil
}

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
	err := s.process(ctx, "finish", func(tx *sql.Tx) error {
		var err error
		lost, err = s.finish(ctx, tx, owner, results)
		return err
	})
	if err != nil {
		return err
	}
	return inbox.Lost(lost)
}

// finish records results in tx (see Finish) and returns the events owner
// no longer holds.
func (s *Store) finish(ctx context.Context, tx *sql.Tx, owner string, results []inbox.Result) ([]int64, error) {
	now := s.now().UnixNano()
	ended, err := s.endLeases(ctx, tx, owner, results, now)
	if err != nil {
		return nil, err
	}
	var lost []int64
	var delivering []inbox.Result
	for _, r := range results {
		switch {
		case !ended[r.ID]:
			lost = append(lost, r.ID)
		case r.Status == inbox.StatusProcessed && len(r.Destinations) > 0:
			delivering = append(delivering, r)
		}
	}
	opened, err := s.openDeliveries(ctx, tx, delivering)
	if err != nil {
		return nil, err
	}
	// An event none of whose deliveries was opened here (they all existed
	// before) may have nothing left to deliver; one with a delivery
	// opened here has it pending.
	var unopened []int64
	for _, r := range delivering {
		if !opened[r.ID] {
			unopened = append(unopened, r.ID)
		}
	}
	_, err = s.settle(ctx, tx, unopened, now)
	return lost, err
}

// endLeases records results on the events owner leases, and returns the
// ids it recorded.
func (s *Store) endLeases(ctx context.Context, tx *sql.Tx, owner string, results []inbox.Result, now int64) (map[int64]bool, error) {
	ended := make(map[int64]bool, len(results))
	for chunk := range sqlitedb.Chunks(results) {
		args := make([]any, 0, 6*len(chunk)+1)
		for _, r := range chunk {
			status, next, processed, dead := r.Status, int64(0), int64(0), int64(0)
			switch {
			case r.Status == inbox.StatusRetry:
				next = nanos(r.NextAttemptAt)
			case r.Status == inbox.StatusProcessed && len(r.Destinations) > 0:
				status = inbox.StatusDelivering
			case r.Status == inbox.StatusProcessed:
				processed = now
			case r.Status == inbox.StatusDead:
				dead = now
			}
			args = append(args, r.ID, string(status), next, r.Error, processed, dead)
		}
		args = append(args, owner)
		err := s.db.EachRow(ctx, tx, finishEvents(len(chunk)), args, func(r *sql.Rows) error {
			var id int64
			err := r.Scan(&id)
			ended[id] = true
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return ended, nil
}

// finishEvents records the results of k events: the rows are (id,
// status, next attempt, error, processed at, dead at), and the last
// argument is the lease owner.
func finishEvents(k int) string {
	return `UPDATE events SET status = d.column2, next_attempt_at = d.column3,
		last_error = d.column4, processed_at = d.column5, dead_at = d.column6, lease_owner = '', lease_until = 0
		FROM (VALUES ` + sqlitedb.Rows("(?, ?, ?, ?, ?, ?)", k) + `) AS d
		WHERE id = d.column1 AND lease_owner = ? RETURNING id`
}

// openQuery opens k deliveries, of rows (event id, destination, order
// key), that do not exist yet. "WHERE true" tells SQLite's parser that
// ON CONFLICT is the upsert's, not the join's.
func openQuery(k int) string {
	return `INSERT INTO deliveries
		(event_id, destination, source, status, attempts, code, error, at, order_key, ord)
		SELECT e.id, d.column2, e.source, 'pending', 0, 0, '', 0, d.column3, e.entity_order
		FROM (VALUES ` + sqlitedb.Rows("(?, ?, ?)", k) + `) AS d JOIN events e ON e.id = d.column1 WHERE true
		ON CONFLICT (event_id, destination) DO NOTHING
		RETURNING event_id, destination, source, order_key`
}

// openDeliveries opens a pending delivery for each destination of the
// results that the event has not had yet, and the order of those with an
// order key, and returns the events it opened one for.
func (s *Store) openDeliveries(ctx context.Context, tx *sql.Tx, results []inbox.Result) (map[int64]bool, error) {
	type opening struct {
		id        int64
		dest, key string
	}
	var openings []opening
	for _, r := range results {
		for _, d := range r.Destinations {
			openings = append(openings, opening{r.ID, d, r.OrderKeys[d]})
		}
	}
	opened := map[int64]bool{}
	// ordered are the opened deliveries with an order key, by lane.
	ordered := map[delivery]ordering{}
	for chunk := range sqlitedb.Chunks(openings) {
		args := make([]any, 0, 3*len(chunk))
		for _, o := range chunk {
			args = append(args, o.id, o.dest, o.key)
		}
		err := s.db.EachRow(ctx, tx, openQuery(len(chunk)), args, func(r *sql.Rows) error {
			var (
				d delivery
				o ordering
			)
			if err := r.Scan(&d.id, &d.dest, &o.source, &o.key); err != nil {
				return err
			}
			opened[d.id] = true
			if o.key != "" {
				ordered[d] = o
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	// The keys open in event id order.
	for _, d := range slices.SortedFunc(maps.Keys(ordered), func(a, b delivery) int {
		return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.dest, b.dest))
	}) {
		o := ordered[d]
		if err := openOrdered(ctx, tx, inbox.Lane{Source: o.source, Destination: d.dest}, o.key, d.id); err != nil {
			return nil, err
		}
	}
	return opened, nil
}
