package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
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
		lost = lost[:0]
		end, err := s.db.Stmt(ctx, tx, `UPDATE events SET status = ?, next_attempt_at = ?,
			last_error = ?, processed_at = ?, dead_at = ?, lease_owner = '', lease_until = 0
			WHERE id = ? AND lease_owner = ?`)
		if err != nil {
			return err
		}
		defer end.Close()
		open, err := s.db.Stmt(ctx, tx, `INSERT INTO deliveries
			(event_id, destination, source, status, attempts, code, error, at, order_key, ord)
			SELECT id, ?, source, 'pending', 0, 0, '', 0, ?, entity_order FROM events WHERE id = ?
			ON CONFLICT (event_id, destination) DO NOTHING
			RETURNING source`)
		if err != nil {
			return err
		}
		defer open.Close()
		now := s.now().UnixNano()
		// unopened are the events none of whose deliveries was opened
		// here (they all existed before): they may have nothing left to
		// deliver. An event with a delivery opened here has it pending.
		var unopened []int64
		for _, r := range results {
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
			res, err := end.ExecContext(ctx, string(status), next, r.Error, processed, dead, r.ID, owner)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				lost = append(lost, r.ID)
				continue
			}
			if status != inbox.StatusDelivering {
				continue
			}
			opened := false
			for _, d := range r.Destinations {
				key := r.OrderKeys[d]
				var source string
				err := open.QueryRowContext(ctx, d, key, r.ID).Scan(&source)
				if errors.Is(err, sql.ErrNoRows) {
					continue
				}
				if err != nil {
					return err
				}
				opened = true
				if key == "" {
					continue
				}
				if err := openOrdered(ctx, tx, inbox.Lane{Source: source, Destination: d}, key, r.ID); err != nil {
					return err
				}
			}
			if !opened {
				unopened = append(unopened, r.ID)
			}
		}
		_, err = s.settle(ctx, tx, unopened, now)
		return err
	})
	if err != nil {
		return err
	}
	if len(lost) > 0 {
		return &inbox.LostError{IDs: slices.Clone(lost)}
	}
	return nil
}
