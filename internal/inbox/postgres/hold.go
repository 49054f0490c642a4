package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookgate/hookgate/internal/inbox"
)

var (
	_ inbox.LaneHolder = (*Store)(nil)
	_ inbox.AttemptLog = (*Store)(nil)
)

// HoldLane implements inbox.LaneHolder. A lane without a row yet gets one
// in the healthy state; the circuit's upserts (SetLaneState) leave held as
// it is. Every node's next Dispatch of the lane reads it.
func (s *Store) HoldLane(ctx context.Context, lane inbox.Lane, held bool) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO inbox_lanes
		(source, destination, state, failures, until, last_error, changed_at, held)
		VALUES ($1, $2, $3, 0, '-infinity', '', '-infinity', $4)
		ON CONFLICT (source, destination) DO UPDATE SET held = excluded.held`,
		lane.Source, lane.Destination, inbox.LaneHealthy, held)
	if err != nil {
		return inbox.Fail(ctx, "hold lane", err)
	}
	return nil
}

// RecentAttempts implements inbox.AttemptLog, walking the index
// inbox_attempts_destination from the newest.
func (s *Store) RecentAttempts(ctx context.Context, destination string, limit int) ([]inbox.Attempt, error) {
	rows, err := s.pool.Query(ctx, `SELECT event_id, destination, at, duration, code, error, body
		FROM inbox_attempts WHERE destination = $1 ORDER BY seq DESC LIMIT $2`, destination, limit)
	if err != nil {
		return nil, inbox.Fail(ctx, "recent attempts", err)
	}
	defer rows.Close()
	var out []inbox.Attempt
	for rows.Next() {
		var (
			a   inbox.Attempt
			at  pgtype.Timestamptz
			dur int64
		)
		if err := rows.Scan(&a.EventID, &a.Destination, &at, &dur, &a.Code, &a.Error, &a.Body); err != nil {
			return nil, inbox.Fail(ctx, "recent attempts", err)
		}
		a.At, a.Duration = fromTS(at), time.Duration(dur)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, inbox.Fail(ctx, "recent attempts", err)
	}
	return out, nil
}
