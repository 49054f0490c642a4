package spool

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/gob"
	"errors"
	"fmt"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// Acceptor is the inbox the spool drains into.
type Acceptor interface {
	Accept(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error)
}

// Drained is what one Drain did.
type Drained struct {
	// Moved counts the events whose outcome the drain recorded.
	Moved int
	// Quarantined are the rows the drain set aside.
	Quarantined []Quarantined
}

// Empty reports whether the drain found nothing to do: nothing waits.
func (d Drained) Empty() bool { return d.Moved == 0 && len(d.Quarantined) == 0 }

// Quarantined is a spooled row that cannot be decoded (a damaged file, or
// one written by a hookgate that encoded events differently). It is kept
// with its bytes, out of the drain, for an operator to look at: one such
// row must not stop the events behind it.
type Quarantined struct {
	Seq       int64
	SpooledAt time.Time
	// Reason is why it could not be decoded.
	Reason string
	// Item is the row's encoded event, as stored.
	Item []byte
}

// recorded is the outcome of one drained row.
type recorded struct {
	seq     int64
	outcome string
	at      int64 // when it was drained, Unix nanoseconds
}

// waitingRow is a row read for a drain.
type waitingRow struct {
	seq, request int64
	offered      bool // an earlier drain offered it to the inbox
	item         inbox.Item
}

// Drain moves waiting events, oldest first and up to about n, into dst in
// one Accept and records each one's outcome.
//
// It honours Accept's contract: a request's events go in one Accept (a
// request is never split, so a batch may pass n to hold the last one
// whole), and one Accept holds at most one request per replay guard
// digest, so that of two spooled requests with one digest (a replay that
// reached two nodes' spools) the inbox keeps the first and finds the other
// a replay at the next Drain.
//
// A row that cannot be decoded is quarantined (kept, counted, returned in
// Drained once) and the drain goes on with the others.
//
// Each row is marked offered, durably, before the Accept, and unmarked
// when dst refuses it (Accept wrote nothing; the events wait for the next
// Drain). A row still marked when it is read again may have been taken by
// the inbox at an offer whose answer was lost (it ran out of time) or not
// recorded (the node stopped in between): the inbox answers Duplicate for
// its own copy then, and such a row is recorded New.
//
// When recording the outcomes fails (a full disk) they are kept in
// memory, Stats counts them, and the next Drain only records them: a
// drained event is never offered again while the node runs.
//
// Drain must not run concurrently with itself (one drainer per spool).
func (s *Spool) Drain(ctx context.Context, dst Acceptor, n int) (Drained, error) {
	if s.report {
		return Drained{}, errReport
	}
	s.mu.Lock()
	unrecorded := s.unrecorded
	s.mu.Unlock()
	if len(unrecorded) > 0 {
		if err := s.record(ctx, unrecorded); err != nil {
			return Drained{}, err
		}
		return Drained{Moved: len(unrecorded)}, nil
	}
	rows, bad, err := s.waiting(ctx, n)
	if err != nil {
		return Drained{}, err
	}
	if len(bad) > 0 {
		if err := s.quarantine(ctx, bad); err != nil {
			return Drained{}, err
		}
	}
	done := Drained{Quarantined: bad}
	rows = oneRequestPerDigest(rows)
	if len(rows) == 0 {
		return done, nil
	}
	if err := s.mark(ctx, rows, 1); err != nil {
		return done, err
	}
	items := make([]inbox.Item, len(rows))
	for i := range rows {
		items[i] = rows[i].item
	}
	outs, err := dst.Accept(ctx, items)
	if err != nil {
		err = fmt.Errorf("spool: drain: %w", err)
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			// The answer was lost, not refused: the inbox may have
			// committed, and the rows stay marked.
			return done, err
		}
		// The inbox refused and wrote nothing: the next offer is the
		// rows' first again.
		return done, errors.Join(err, s.mark(ctx, rows, 0))
	}
	now := s.now().UnixNano()
	outcomes := make([]recorded, len(rows))
	for i, r := range rows {
		outcomes[i] = recorded{seq: r.seq, outcome: OutcomeDuplicate, at: now}
		if outs[i].Status == dedupe.New || r.offered {
			outcomes[i].outcome = OutcomeNew
		}
	}
	if err := s.record(ctx, outcomes); err != nil {
		return done, err
	}
	done.Moved = len(rows)
	return done, nil
}

// record writes outcomes; when it cannot, it keeps them for the next
// Drain.
func (s *Spool) record(ctx context.Context, outcomes []recorded) error {
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		for _, r := range outcomes {
			if _, err := tx.ExecContext(ctx, `UPDATE spool SET drained_at = ?, outcome = ? WHERE seq = ?`, r.at, r.outcome, r.seq); err != nil {
				return err
			}
		}
		return nil
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.unrecorded = outcomes
		return fmt.Errorf("spool: drain: the inbox has %d events whose outcome could not be recorded (recorded at the next drain): %w", len(outcomes), err)
	}
	s.unrecorded = nil
	return nil
}

// mark sets the rows' offered flag: 1 before they are offered to the
// inbox, 0 again when the inbox refused them (and wrote nothing).
func (s *Spool) mark(ctx context.Context, rows []waitingRow, offered int) error {
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		for _, r := range rows {
			if _, err := tx.ExecContext(ctx, `UPDATE spool SET offered = ? WHERE seq = ?`, offered, r.seq); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("spool: drain: mark offered: %w", err)
	}
	return nil
}

// quarantine sets bad aside.
func (s *Spool) quarantine(ctx context.Context, bad []Quarantined) error {
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		for _, q := range bad {
			if _, err := tx.ExecContext(ctx, `UPDATE spool SET quarantine = ? WHERE seq = ?`, q.Reason, q.Seq); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("spool: drain: quarantine: %w", err)
	}
	s.quarantined.Add(int64(len(bad)))
	return nil
}

// oneRequestPerDigest returns the leading rows of rows (whole requests,
// in order) in which no two requests share a digest.
func oneRequestPerDigest(rows []waitingRow) []waitingRow {
	requests := map[dedupe.Hash]int64{}
	for i, r := range rows {
		d := r.item.Digest
		if d == (dedupe.Hash{}) {
			continue
		}
		if req, ok := requests[d]; ok && req != r.request {
			return rows[:i]
		}
		requests[d] = r.request
	}
	return rows
}

// waiting reads about n waiting rows in arrival order, whole requests:
// the last request read is completed past n. Rows that do not decode are
// returned apart, to quarantine.
func (s *Spool) waiting(ctx context.Context, n int) ([]waitingRow, []Quarantined, error) {
	var (
		rows                 []waitingRow
		bad                  []Quarantined
		read                 int
		lastRequest, lastSeq int64
	)
	scan := func(query string, args ...any) error {
		rs, err := s.db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var (
				r       waitingRow
				raw     []byte
				offered int
				at      int64
			)
			if err := rs.Scan(&r.seq, &r.request, &raw, &offered, &at); err != nil {
				return err
			}
			read, lastRequest, lastSeq = read+1, r.request, r.seq
			if err := gob.NewDecoder(bytes.NewReader(raw)).Decode(&r.item); err != nil {
				bad = append(bad, Quarantined{Seq: r.seq, SpooledAt: time.Unix(0, at), Reason: "decode: " + err.Error(), Item: raw})
				continue
			}
			r.offered = offered > 0
			rows = append(rows, r)
		}
		return rs.Err()
	}
	const cols = `SELECT seq, request, item, offered, spooled_at FROM spool WHERE drained_at IS NULL AND quarantine IS NULL`
	err := scan(cols+` ORDER BY request, seq LIMIT ?`, n)
	if err == nil && read == n {
		err = scan(cols+` AND request = ? AND seq > ? ORDER BY seq`, lastRequest, lastSeq)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("spool: read: %w", err)
	}
	return rows, bad, nil
}

// Quarantined lists the quarantined rows, oldest first.
func (s *Spool) Quarantined(ctx context.Context) ([]Quarantined, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, spooled_at, quarantine, item FROM spool WHERE quarantine IS NOT NULL ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("spool: quarantined: %w", err)
	}
	defer rows.Close()
	var out []Quarantined
	for rows.Next() {
		var (
			q  Quarantined
			at int64
		)
		if err := rows.Scan(&q.Seq, &at, &q.Reason, &q.Item); err != nil {
			return nil, fmt.Errorf("spool: quarantined: %w", err)
		}
		q.SpooledAt = time.Unix(0, at)
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("spool: quarantined: %w", err)
	}
	return out, nil
}
