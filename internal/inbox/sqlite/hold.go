package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

var (
	_ inbox.LaneHolder = (*Store)(nil)
	_ inbox.AttemptLog = (*Store)(nil)
)

// HoldLane implements inbox.LaneHolder. A lane without a row yet gets one
// in the healthy state; the circuit's upserts (SetLaneState) leave held as
// it is.
func (s *Store) HoldLane(ctx context.Context, lane inbox.Lane, held bool) error {
	return s.write(ctx, "hold lane", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO lanes
			(source, destination, state, failures, until, last_error, changed_at, held)
			VALUES (?, ?, ?, 0, 0, '', 0, ?)
			ON CONFLICT (source, destination) DO UPDATE SET held = excluded.held`,
			lane.Source, lane.Destination, inbox.LaneHealthy, held)
		return err
	})
}

// RecentAttempts implements inbox.AttemptLog, walking the index
// attempts_destination from the newest.
func (s *Store) RecentAttempts(ctx context.Context, destination string, limit int) ([]inbox.Attempt, error) {
	var out []inbox.Attempt
	err := s.each(ctx, `SELECT event_id, destination, at, duration, code, error, body
		FROM attempts INDEXED BY attempts_destination WHERE destination = ? ORDER BY seq DESC LIMIT ?`, func(rows *sql.Rows) error {
		var (
			a       inbox.Attempt
			at, dur int64
		)
		if err := rows.Scan(&a.EventID, &a.Destination, &at, &dur, &a.Code, &a.Error, &a.Body); err != nil {
			return err
		}
		a.At, a.Duration = fromNanos(at), time.Duration(dur)
		out = append(out, a)
		return nil
	}, destination, limit)
	if err != nil {
		return nil, inbox.Fail(ctx, "recent attempts", err)
	}
	return out, nil
}
