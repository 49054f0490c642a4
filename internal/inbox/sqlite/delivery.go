package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

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

// recordBatch caps how many deliveries one transaction records.
const recordBatch = 500

// recorder is a group commit for RecordDelivery. Workers record each
// delivery as soon as it is answered, so that a crash never re-sends it,
// and they deliver many at once; one durable transaction per record would
// cap them at one fsync per delivery. Instead, a caller that finds no
// transaction under way leads one for everything queued by then, and
// hands the lead to the first caller that queued meanwhile; everyone
// returns once their own record is committed.
type recorder struct {
	mu     sync.Mutex
	queue  []*pendingRecord
	leader bool // a caller is writing or about to write the queue
}

// pendingRecord is one queued RecordDelivery.
type pendingRecord struct {
	d inbox.Delivery
	// turn receives the record's outcome, or the lead.
	turn chan recordTurn
}

// recordTurn is what a queued caller is told: lead the next transaction,
// or how its record went.
type recordTurn struct {
	lead bool
	err  error
}

// RecordDelivery implements inbox.Store. A zero d.At records the store's
// current time. Concurrent calls share one transaction; a call returns
// when its record is durable, even if ctx ends while it waits in the
// queue behind one transaction.
func (s *Store) RecordDelivery(ctx context.Context, d inbox.Delivery) error {
	switch d.Status {
	case inbox.DeliveryDelivered, inbox.DeliveryFailed:
	default:
		return fmt.Errorf("inbox: record delivery of event %d: %w %q", d.EventID, ErrBadResult, d.Status)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("inbox: record delivery: %w", err)
	}
	r := &s.recorder
	p := &pendingRecord{d: d, turn: make(chan recordTurn, 1)}
	r.mu.Lock()
	r.queue = append(r.queue, p)
	lead := !r.leader
	r.leader = true
	r.mu.Unlock()
	if !lead {
		t := <-p.turn
		if !t.lead {
			return t.err
		}
	}
	return s.leadRecords(ctx, p)
}

// leadRecords writes up to recordBatch queued records, p among them, in
// one transaction, tells their callers, and passes the lead on to the
// first caller still queued.
func (s *Store) leadRecords(ctx context.Context, p *pendingRecord) error {
	r := &s.recorder
	r.mu.Lock()
	batch := r.queue[:min(len(r.queue), recordBatch)]
	r.queue = r.queue[len(batch):]
	r.mu.Unlock()

	// The transaction carries other callers' records, so one caller's
	// cancellation must not fail it.
	ctx = context.WithoutCancel(ctx)
	err := s.write(ctx, "record delivery", func(tx *sql.Tx) error {
		return s.record(ctx, tx, batch)
	})
	var own error
	for _, q := range batch {
		if q == p {
			own = err
			continue
		}
		q.turn <- recordTurn{err: err}
	}

	r.mu.Lock()
	if len(r.queue) == 0 {
		r.leader = false
	} else {
		r.queue[0].turn <- recordTurn{lead: true}
	}
	r.mu.Unlock()
	return own
}

// record upserts the batch's deliveries in tx, in the order they were
// queued.
func (s *Store) record(ctx context.Context, tx *sql.Tx, batch []*pendingRecord) error {
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO deliveries
		(event_id, destination, status, attempts, code, error, at) VALUES (?, ?, ?, 1, ?, ?, ?)
		ON CONFLICT (event_id, destination) DO UPDATE SET status = excluded.status,
		attempts = deliveries.attempts + 1, code = excluded.code, error = excluded.error, at = excluded.at`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	now := s.now().UnixNano()
	for _, q := range batch {
		d := q.d
		at := nanos(d.At)
		if at == 0 {
			at = now
		}
		if _, err := stmt.ExecContext(ctx, d.EventID, d.Destination, string(d.Status), d.Code, d.Error, at); err != nil {
			return err
		}
	}
	return nil
}
