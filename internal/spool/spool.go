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
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

// steps are the spool's schema versions.
var steps = []sqlitedb.Step{
	sqlitedb.Exec("spool", `
CREATE TABLE spool (
	seq        INTEGER PRIMARY KEY,
	hash       BLOB    NOT NULL UNIQUE,
	item       BLOB    NOT NULL,
	spooled_at INTEGER NOT NULL,
	expires    INTEGER NOT NULL,
	drained_at INTEGER,
	outcome    TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX spool_waiting ON spool (seq) WHERE drained_at IS NULL;
CREATE INDEX spool_expires ON spool (expires) WHERE drained_at IS NOT NULL;`),
}

// Outcomes of a drained event.
const (
	// OutcomeNew: the inbox stored the event; it is processed from there.
	OutcomeNew = "new"
	// OutcomeDuplicate: the inbox already held the event (stored by
	// another node, or before the outage); it is not processed again.
	OutcomeDuplicate = "duplicate"
)

// Spool is a node's durable spool. It is safe for concurrent use.
type Spool struct {
	db  *sqlitedb.DB
	now func() time.Time
}

// Options tune a Spool; zero values mean the defaults.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Open opens (creating if absent) the spool file at path.
func Open(ctx context.Context, path string, opts Options) (*Spool, error) {
	db, err := sqlitedb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if err := db.Migrate(ctx, "spool", steps); err != nil {
		db.Close()
		return nil, fmt.Errorf("spool: %w", err)
	}
	s := &Spool{db: db, now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// Close closes the spool file.
func (s *Spool) Close() error { return s.db.Close() }

// Put stores items durably, in one transaction, and reports one outcome per
// item: New when it was spooled, Duplicate when its key is spooled already
// (waiting, or drained within its window). Items must carry distinct
// hashes.
func (s *Spool) Put(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	out := make([]inbox.Outcome, len(items))
	now := s.now().UnixNano()
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		for i := range items {
			it := &items[i]
			var first, expires int64
			err := tx.QueryRowContext(ctx, `SELECT spooled_at, expires FROM spool WHERE hash = ? AND expires > ?`,
				it.Event.Hash[:], now).Scan(&first, &expires)
			switch {
			case err == nil:
				out[i] = inbox.Outcome{Status: dedupe.Duplicate, FirstSeen: time.Unix(0, first), Expires: time.Unix(0, expires)}
				continue
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
			var buf bytes.Buffer
			if err := gob.NewEncoder(&buf).Encode(it); err != nil {
				return fmt.Errorf("encode %s: %w", it.Event.EventID, err)
			}
			end := sqlitedb.After(now, it.Window)
			if _, err := tx.ExecContext(ctx, `DELETE FROM spool WHERE hash = ?`, it.Event.Hash[:]); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO spool (hash, item, spooled_at, expires) VALUES (?, ?, ?, ?)`,
				it.Event.Hash[:], buf.Bytes(), now, end); err != nil {
				return err
			}
			out[i] = inbox.Outcome{Status: dedupe.New, FirstSeen: time.Unix(0, now), Expires: time.Unix(0, end)}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spool: put: %w", err)
	}
	return out, nil
}

// Acceptor is the inbox the spool drains into.
type Acceptor interface {
	Accept(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error)
}

// Drain moves up to n waiting events, oldest first, into dst in one Accept
// and records each one's outcome. It returns how many it moved; 0 means
// the spool is empty. When dst fails, nothing is recorded and the events
// wait for the next Drain; if dst had in fact stored them, the next Drain
// finds them duplicates.
//
// Drain must not run concurrently with itself (one drainer per spool).
func (s *Spool) Drain(ctx context.Context, dst Acceptor, n int) (int, error) {
	seqs, items, err := s.waiting(ctx, n)
	if err != nil || len(items) == 0 {
		return 0, err
	}
	outs, err := dst.Accept(ctx, items)
	if err != nil {
		return 0, fmt.Errorf("spool: drain: %w", err)
	}
	now := s.now().UnixNano()
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		for i, seq := range seqs {
			outcome := OutcomeDuplicate
			if outs[i].Status == dedupe.New {
				outcome = OutcomeNew
			}
			if _, err := tx.ExecContext(ctx, `UPDATE spool SET drained_at = ?, outcome = ? WHERE seq = ?`, now, outcome, seq); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("spool: drain: record: %w", err)
	}
	return len(seqs), nil
}

// waiting reads up to n waiting events in arrival order. Events of one
// request may share a digest; a batch never holds one hash twice, since a
// hash is spooled once.
func (s *Spool) waiting(ctx context.Context, n int) ([]int64, []inbox.Item, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, item FROM spool WHERE drained_at IS NULL ORDER BY seq LIMIT ?`, n)
	if err != nil {
		return nil, nil, fmt.Errorf("spool: read: %w", err)
	}
	defer rows.Close()
	var (
		seqs  []int64
		items []inbox.Item
	)
	for rows.Next() {
		var (
			seq int64
			raw []byte
			it  inbox.Item
		)
		if err := rows.Scan(&seq, &raw); err != nil {
			return nil, nil, fmt.Errorf("spool: read: %w", err)
		}
		if err := gob.NewDecoder(bytes.NewReader(raw)).Decode(&it); err != nil {
			return nil, nil, fmt.Errorf("spool: decode event %d: %w", seq, err)
		}
		seqs, items = append(seqs, seq), append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("spool: read: %w", err)
	}
	return seqs, items, nil
}

// Stats is what the spool holds.
type Stats struct {
	// Spooled counts the events kept (waiting, or drained within their
	// window); Waiting those not drained yet; Drained those moved to the
	// inbox, of which Duplicates were already there.
	Spooled, Waiting, Drained, Duplicates int64
	// OldestWaiting is when the oldest waiting event arrived; zero when
	// none waits.
	OldestWaiting time.Time
	// FirstSpooled and LastSpooled bound the arrivals kept; LastDrained
	// is the latest drain. Zero when there are none.
	FirstSpooled, LastSpooled, LastDrained time.Time
}

// Stats reads the spool's counts.
func (s *Spool) Stats(ctx context.Context) (Stats, error) {
	var (
		st                               Stats
		oldest, first, last, lastDrained sql.NullInt64
	)
	err := s.db.QueryRowContext(ctx, `SELECT count(*),
		count(*) FILTER (WHERE drained_at IS NULL),
		count(*) FILTER (WHERE drained_at IS NOT NULL),
		count(*) FILTER (WHERE outcome = ?),
		min(spooled_at) FILTER (WHERE drained_at IS NULL),
		min(spooled_at), max(spooled_at), max(drained_at)
		FROM spool`, OutcomeDuplicate).Scan(&st.Spooled, &st.Waiting, &st.Drained, &st.Duplicates,
		&oldest, &first, &last, &lastDrained)
	if err != nil {
		return Stats{}, fmt.Errorf("spool: stats: %w", err)
	}
	st.OldestWaiting, st.FirstSpooled, st.LastSpooled, st.LastDrained = when(oldest), when(first), when(last), when(lastDrained)
	return st, nil
}

// Sweep removes drained events whose window has passed, and reports how
// many.
func (s *Spool) Sweep(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM spool WHERE drained_at IS NOT NULL AND expires <= ?`, s.now().UnixNano())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("spool: sweep: %w", err)
	}
	return n, nil
}

func when(ns sql.NullInt64) time.Time {
	if !ns.Valid {
		return time.Time{}
	}
	return time.Unix(0, ns.Int64)
}
