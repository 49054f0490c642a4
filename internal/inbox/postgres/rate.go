package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookgate/hookgate/internal/inbox"
)

// schemaV9 keeps each rated lane's schedule (see inbox.Rate), shared by
// every node: its next free slot, and the end of a destination's
// Retry-After.
const schemaV9 = `
CREATE TABLE inbox_rate_schedules (
	source      text        NOT NULL,
	destination text        NOT NULL,
	next        timestamptz NOT NULL,
	hold        timestamptz NOT NULL,
	PRIMARY KEY (source, destination)
);
`

// DispatchRated implements inbox.RatedDispatcher.
func (s *Store) DispatchRated(ctx context.Context, owner string, lane inbox.Lane, done []inbox.Done, n int, d time.Duration, l inbox.RateLimit) (inbox.Dispatched, error) {
	return s.dispatch(ctx, owner, lane, done, n, d, &l)
}

// readSchedule reads lane's schedule (empty when the lane has none)
// and the database's time: one clock for every node. With lock, the
// schedule is created when missing and locked until the transaction
// ends.
func (s *Store) readSchedule(ctx context.Context, tx pgx.Tx, lane inbox.Lane, lock bool) (inbox.Schedule, time.Time, error) {
	query := `SELECT next, hold, coalesce($3::timestamptz, clock_timestamp())
		FROM inbox_rate_schedules WHERE source = $1 AND destination = $2`
	if lock {
		_, err := tx.Exec(ctx, `INSERT INTO inbox_rate_schedules (source, destination, next, hold)
			VALUES ($1, $2, '-infinity', '-infinity') ON CONFLICT (source, destination) DO NOTHING`,
			lane.Source, lane.Destination)
		if err != nil {
			return inbox.Schedule{}, time.Time{}, err
		}
		query += ` FOR UPDATE`
	}
	var (
		sch             inbox.Schedule
		next, hold, now pgtype.Timestamptz
	)
	err := tx.QueryRow(ctx, query, lane.Source, lane.Destination, s.clock()).Scan(&next, &hold, &now)
	if errors.Is(err, pgx.ErrNoRows) {
		err = tx.QueryRow(ctx, `SELECT coalesce($1::timestamptz, clock_timestamp())`, s.clock()).Scan(&now)
	}
	sch.Next, sch.Hold = fromTS(next), fromTS(hold)
	return sch, fromTS(now), err
}

// leaseRated leases with lease no more deliveries of lane than its
// schedule has slots within reach, then locks the schedule, gives each
// delivery its slot and stores it. The schedule is the transaction's
// last lock: a transaction that holds it waits for no other, so rated
// dispatches cannot deadlock on it, and nodes wait on each other only
// for the statement that takes the slots.
func (s *Store) leaseRated(ctx context.Context, tx pgx.Tx, lane inbox.Lane, l inbox.RateLimit, n int, lease func(int) (int, error), out *inbox.Dispatched) error {
	sch, now, err := s.readSchedule(ctx, tx, lane, false)
	if err != nil {
		return err
	}
	k, wait := l.Plan(sch, now, n)
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
	slots, err := s.takeSlots(ctx, tx, lane, l, leased)
	for i, slot := range slots {
		out.Tasks[i].Slot = slot
	}
	return err
}

// takeSlots locks lane's schedule, gives k deliveries its next slots and
// stores it.
func (s *Store) takeSlots(ctx context.Context, tx pgx.Tx, lane inbox.Lane, l inbox.RateLimit, k int) ([]time.Time, error) {
	sch, now, err := s.readSchedule(ctx, tx, lane, true)
	if err != nil {
		return nil, err
	}
	slots, sch := l.Take(sch, now, k)
	_, err = tx.Exec(ctx, `UPDATE inbox_rate_schedules SET next = $3, hold = $4 WHERE source = $1 AND destination = $2`,
		lane.Source, lane.Destination, ts(sch.Next), ts(sch.Hold))
	return slots, err
}

// Reslot implements inbox.RatedDispatcher.
func (s *Store) Reslot(ctx context.Context, lane inbox.Lane, l inbox.RateLimit, k int) ([]time.Time, error) {
	var slots []time.Time
	err := s.tx(ctx, "reslot", func(tx pgx.Tx) error {
		var err error
		slots, err = s.takeSlots(ctx, tx, lane, l, k)
		return err
	})
	return slots, err
}
