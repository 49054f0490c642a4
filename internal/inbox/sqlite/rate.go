package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// rateSchema keeps each rated lane's schedule (see inbox.Rate): its
// next free slot, and the end of a destination's Retry-After.
const rateSchema = `
CREATE TABLE rate_schedules (
	source      TEXT    NOT NULL,
	destination TEXT    NOT NULL,
	next        INTEGER NOT NULL,
	hold        INTEGER NOT NULL,
	PRIMARY KEY (source, destination)
) WITHOUT ROWID;
`

// DispatchRated implements inbox.RatedDispatcher.
func (s *Store) DispatchRated(ctx context.Context, owner string, lane inbox.Lane, done []inbox.Done, n int, d time.Duration, l inbox.RateLimit) (inbox.Dispatched, error) {
	return s.dispatch(ctx, owner, lane, done, n, d, &l)
}

// schedule reads lane's schedule: empty when the lane has none.
func (s *Store) schedule(ctx context.Context, tx *sql.Tx, lane inbox.Lane) (inbox.Schedule, error) {
	var (
		sch        inbox.Schedule
		next, hold int64
	)
	err := tx.QueryRowContext(ctx, `SELECT next, hold FROM rate_schedules WHERE source = ? AND destination = ?`,
		lane.Source, lane.Destination).Scan(&next, &hold)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return sch, nil
	case err != nil:
		return sch, err
	}
	sch.Next, sch.Hold = fromNanos(next), fromNanos(hold)
	return sch, nil
}

// takeSlots gives k deliveries the next slots of lane's schedule sch at
// now, and stores it.
func (s *Store) takeSlots(ctx context.Context, tx *sql.Tx, lane inbox.Lane, l inbox.RateLimit, sch inbox.Schedule, now time.Time, k int) ([]time.Time, error) {
	slots, sch := l.Take(sch, now, k)
	_, err := tx.ExecContext(ctx, `INSERT INTO rate_schedules (source, destination, next, hold) VALUES (?, ?, ?, ?)
		ON CONFLICT (source, destination) DO UPDATE SET next = excluded.next, hold = excluded.hold`,
		lane.Source, lane.Destination, nanos(sch.Next), nanos(sch.Hold))
	return slots, err
}

// leaseRated leases with lease no more deliveries of lane than its
// schedule has slots within reach, gives each its slot and stores the
// schedule. SQLite runs one write transaction at a time: the schedule
// read is the schedule written.
func (s *Store) leaseRated(ctx context.Context, tx *sql.Tx, lane inbox.Lane, l inbox.RateLimit, n int, now int64, lease func(int) (int, error), out *inbox.Dispatched) error {
	sch, err := s.schedule(ctx, tx, lane)
	if err != nil {
		return err
	}
	at := time.Unix(0, now)
	k, wait := l.Plan(sch, at, n)
	out.Wait = wait
	leased := 0
	if k > 0 {
		if leased, err = lease(k); err != nil {
			return err
		}
	}
	if !l.Changes(sch, leased) {
		return nil
	}
	slots, err := s.takeSlots(ctx, tx, lane, l, sch, at, leased)
	for i, slot := range slots {
		out.Tasks[i].Slot = slot
	}
	return err
}

// Reslot implements inbox.RatedDispatcher.
func (s *Store) Reslot(ctx context.Context, lane inbox.Lane, l inbox.RateLimit, k int) ([]time.Time, error) {
	var slots []time.Time
	err := s.write(ctx, "reslot", func(tx *sql.Tx) error {
		sch, err := s.schedule(ctx, tx, lane)
		if err != nil {
			return err
		}
		slots, err = s.takeSlots(ctx, tx, lane, l, sch, s.now(), k)
		return err
	})
	return slots, err
}
