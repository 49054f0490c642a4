package spool

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

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
	db     *sqlitedb.DB
	now    func() time.Time
	lock   *os.File // the node's lock on the file; nil for a report
	report bool

	// quarantined counts the rows set aside (see Drain).
	quarantined atomic.Int64

	mu sync.Mutex
	// unrecorded are the outcomes of the last drain that the spool
	// could not write (a full disk): the inbox has the events, so the
	// next Drain records these before it offers anything.
	unrecorded []recorded
}

// Options tune a Spool; zero values mean the defaults.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Report opens the spool only to read what it holds (Stats,
	// Quarantined: `hookgate reconcile`), without the lock of the node
	// that owns the file, which may be running. Such a spool refuses Put
	// and Drain.
	Report bool
}

// errReport is the error of Put and Drain on a spool opened to report.
var errReport = errors.New("spool: opened to report; only its node writes to it")

// Open opens (creating if absent) the spool file at path, and takes the
// node's lock on it: one node per spool file ([ErrLocked] names the
// process that holds it), since two nodes draining one spool would offer
// each event twice.
func Open(ctx context.Context, path string, opts Options) (*Spool, error) {
	s := &Spool{now: opts.Now, report: opts.Report}
	if s.now == nil {
		s.now = time.Now
	}
	if !opts.Report {
		f, err := lock(path)
		if err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		s.lock = f
	}
	db, err := sqlitedb.Open(path)
	if err != nil {
		s.unlock()
		return nil, fmt.Errorf("spool: %w", err)
	}
	s.db = db
	if err := db.Migrate(ctx, "spool", steps); err != nil {
		s.Close()
		return nil, fmt.Errorf("spool: %w", err)
	}
	var n int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM spool WHERE quarantine IS NOT NULL`).Scan(&n); err != nil {
		s.Close()
		return nil, fmt.Errorf("spool: %w", err)
	}
	s.quarantined.Store(n)
	return s, nil
}

// Close closes the spool file and gives up the node's lock.
func (s *Spool) Close() error {
	err := s.db.Close()
	s.unlock()
	return err
}

func (s *Spool) unlock() {
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}

// Put stores items durably, in one transaction, and reports one outcome per
// item, as the inbox's Accept would: items whose request's replay guard
// digest the spool holds already (a replay of a request spooled within its
// window) are Duplicate with the digest's first-seen time; otherwise the
// digest is kept, and each item is New when it was spooled or Duplicate
// when its key is spooled already (waiting, or drained within its window).
// Items must carry distinct hashes, and items that share a digest are one
// request's (at most one request per digest, as for Accept).
func (s *Spool) Put(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	if s.report {
		return nil, errReport
	}
	out := make([]inbox.Outcome, len(items))
	now := s.now().UnixNano()
	var released int64 // quarantined rows replaced
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		released = 0
		var seq int64
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM spool`).Scan(&seq); err != nil {
			return err
		}
		// requests holds each digest's request in this Put: the seq of
		// its first row (0 until it has one), or replays[digest] when the
		// spool held the digest already.
		requests := map[dedupe.Hash]int64{}
		replays := map[dedupe.Hash]inbox.Outcome{}
		for i := range items {
			it := &items[i]
			guarded := it.Digest != (dedupe.Hash{})
			if guarded {
				if o, ok := replays[it.Digest]; ok {
					out[i] = o
					continue
				}
				if _, ok := requests[it.Digest]; !ok {
					o, replay, err := keepDigest(ctx, tx, it, now)
					if err != nil {
						return err
					}
					if replay {
						replays[it.Digest], out[i] = o, o
						continue
					}
					requests[it.Digest] = 0
				}
			}
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
			// A row of the key whose window has passed makes room. Were it
			// quarantined, this copy of its event replaces it.
			var wasQuarantined bool
			err = tx.QueryRowContext(ctx, `DELETE FROM spool WHERE hash = ? RETURNING quarantine IS NOT NULL`,
				it.Event.Hash[:]).Scan(&wasQuarantined)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if wasQuarantined {
				released++
			}
			seq++
			request := seq
			if guarded {
				if requests[it.Digest] == 0 {
					requests[it.Digest] = seq
				}
				request = requests[it.Digest]
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO spool (seq, request, hash, item, spooled_at, expires) VALUES (?, ?, ?, ?, ?, ?)`,
				seq, request, it.Event.Hash[:], buf.Bytes(), now, end); err != nil {
				return err
			}
			out[i] = inbox.Outcome{Status: dedupe.New, FirstSeen: time.Unix(0, now), Expires: time.Unix(0, end)}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("spool: put: %w", err)
	}
	s.quarantined.Add(-released)
	return out, nil
}

// keepDigest looks up the digest of it's request: when the spool holds it
// (not expired) the request is a replay, and o is its items' outcome;
// otherwise the digest is kept for it's window from now.
func keepDigest(ctx context.Context, tx *sql.Tx, it *inbox.Item, now int64) (o inbox.Outcome, replay bool, err error) {
	var first, expires int64
	err = tx.QueryRowContext(ctx, `SELECT first_seen, expires FROM spool_digests WHERE digest = ? AND expires > ?`,
		it.Digest[:], now).Scan(&first, &expires)
	switch {
	case err == nil:
		return inbox.Outcome{Status: dedupe.Duplicate, FirstSeen: time.Unix(0, first), Expires: time.Unix(0, expires)}, true, nil
	case !errors.Is(err, sql.ErrNoRows):
		return inbox.Outcome{}, false, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO spool_digests (digest, first_seen, expires) VALUES (?, ?, ?)
		ON CONFLICT (digest) DO UPDATE SET first_seen = excluded.first_seen, expires = excluded.expires`,
		it.Digest[:], now, sqlitedb.After(now, it.Window))
	return inbox.Outcome{}, false, err
}

// Stats is what the spool holds.
type Stats struct {
	// Spooled counts the events kept (waiting, drained within their
	// window, or quarantined); Waiting those not drained yet; Drained
	// those moved to the inbox, of which Duplicates were already there;
	// Quarantined those that could not be decoded, set aside (see
	// Drain).
	Spooled, Waiting, Drained, Duplicates, Quarantined int64
	// OldestWaiting is when the oldest waiting event arrived; zero when
	// none waits.
	OldestWaiting time.Time
	// FirstSpooled and LastSpooled bound the arrivals kept; LastDrained
	// is the latest drain. Zero when there are none.
	FirstSpooled, LastSpooled, LastDrained time.Time
}

// Stats reads the spool's counts. Outcomes a drain could not write yet (a
// full disk) count as drained: the inbox has those events.
func (s *Spool) Stats(ctx context.Context) (Stats, error) {
	s.mu.Lock()
	unrecorded := append([]recorded(nil), s.unrecorded...)
	s.mu.Unlock()
	seqs := make([]int64, len(unrecorded))
	for i, r := range unrecorded {
		seqs[i] = r.seq
	}
	pending, err := json.Marshal(seqs)
	if err != nil {
		return Stats{}, fmt.Errorf("spool: stats: %w", err)
	}
	var (
		st                               Stats
		oldest, first, last, lastDrained sql.NullInt64
	)
	err = s.db.QueryRowContext(ctx, `WITH unrecorded AS (SELECT value AS seq FROM json_each(?))
		SELECT count(*),
		count(*) FILTER (WHERE drained_at IS NULL AND quarantine IS NULL AND seq NOT IN unrecorded),
		count(*) FILTER (WHERE drained_at IS NOT NULL),
		count(*) FILTER (WHERE outcome = ?),
		count(*) FILTER (WHERE quarantine IS NOT NULL),
		min(spooled_at) FILTER (WHERE drained_at IS NULL AND quarantine IS NULL AND seq NOT IN unrecorded),
		min(spooled_at), max(spooled_at), max(drained_at)
		FROM spool`, string(pending), OutcomeDuplicate).Scan(&st.Spooled, &st.Waiting, &st.Drained, &st.Duplicates,
		&st.Quarantined, &oldest, &first, &last, &lastDrained)
	if err != nil {
		return Stats{}, fmt.Errorf("spool: stats: %w", err)
	}
	st.OldestWaiting, st.FirstSpooled, st.LastSpooled, st.LastDrained = when(oldest), when(first), when(last), when(lastDrained)
	for _, r := range unrecorded {
		st.Drained++
		if r.outcome == OutcomeDuplicate {
			st.Duplicates++
		}
		if at := time.Unix(0, r.at); at.After(st.LastDrained) {
			st.LastDrained = at
		}
	}
	return st, nil
}

// Sweep removes drained events and replay guard digests whose window has
// passed, and reports how many events.
func (s *Spool) Sweep(ctx context.Context) (int64, error) {
	var n int64
	now := s.now().UnixNano()
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM spool WHERE drained_at IS NOT NULL AND expires <= ?`, now)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM spool_digests WHERE expires <= ?`, now)
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
