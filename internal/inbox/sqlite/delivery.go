package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hookgate/hookgate/internal/inbox"
)

// Deliveries implements inbox.Store. Events without a recorded delivery
// are absent from the map.
func (s *Store) Deliveries(ctx context.Context, ids []int64) (map[int64]map[string]inbox.Delivery, error) {
	out := map[int64]map[string]inbox.Delivery{}
	for lo := 0; lo < len(ids); lo += idChunk {
		chunk := ids[lo:min(lo+idChunk, len(ids))]
		if err := s.readDeliveries(ctx, chunk, out); err != nil {
			return nil, fail(ctx, "deliveries", err)
		}
	}
	return out, nil
}

func (s *Store) readDeliveries(ctx context.Context, ids []int64, out map[int64]map[string]inbox.Delivery) error {
	rows, err := s.db.QueryContext(ctx, `SELECT event_id, destination, status, attempts, code, error, at
		FROM deliveries WHERE event_id IN (`+placeholders(len(ids))+`)`, int64Args(ids)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			d      inbox.Delivery
			status string
			at     int64
		)
		if err := rows.Scan(&d.EventID, &d.Destination, &status, &d.Attempts, &d.Code, &d.Error, &at); err != nil {
			return err
		}
		d.Status, d.At = inbox.DeliveryStatus(status), fromNanos(at)
		if out[d.EventID] == nil {
			out[d.EventID] = map[string]inbox.Delivery{}
		}
		out[d.EventID][d.Destination] = d
	}
	return rows.Err()
}

// RecordDelivery implements inbox.Store. A zero d.At records the store's
// current time.
func (s *Store) RecordDelivery(ctx context.Context, d inbox.Delivery) error {
	switch d.Status {
	case inbox.DeliveryDelivered, inbox.DeliveryFailed:
	default:
		return fmt.Errorf("inbox: record delivery of event %d: %w %q", d.EventID, ErrBadResult, d.Status)
	}
	return s.write(ctx, "record delivery", func(tx *sql.Tx) error {
		at := nanos(d.At)
		if at == 0 {
			at = s.now().UnixNano()
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO deliveries
			(event_id, destination, status, attempts, code, error, at) VALUES (?, ?, ?, 1, ?, ?, ?)
			ON CONFLICT (event_id, destination) DO UPDATE SET status = excluded.status,
			attempts = deliveries.attempts + 1, code = excluded.code, error = excluded.error, at = excluded.at`,
			d.EventID, d.Destination, string(d.Status), d.Code, d.Error, at)
		return err
	})
}
