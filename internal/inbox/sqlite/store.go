package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

const schema = `
CREATE TABLE IF NOT EXISTS events (
	id             INTEGER PRIMARY KEY,
	hash           BLOB    NOT NULL,
	scope          TEXT    NOT NULL,
	source         TEXT    NOT NULL,
	provider       TEXT    NOT NULL,
	tenant         TEXT    NOT NULL,
	event_id       TEXT    NOT NULL,
	entity_type    TEXT    NOT NULL DEFAULT '',
	entity_id      TEXT    NOT NULL DEFAULT '',
	entity_version TEXT    NOT NULL DEFAULT '',
	entity_order   INTEGER NOT NULL DEFAULT 0,
	entity_state   TEXT    NOT NULL DEFAULT '',
	payload        BLOB    NOT NULL,
	headers        TEXT    NOT NULL DEFAULT '{}',
	received_at    INTEGER NOT NULL,
	status         TEXT    NOT NULL DEFAULT 'received'
);
CREATE INDEX IF NOT EXISTS events_source ON events(source, id);
CREATE INDEX IF NOT EXISTS events_status ON events(status, id);
CREATE TABLE IF NOT EXISTS settings (
	name  TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;
`

// Store is the SQLite inbox.
type Store struct {
	db    *sqlitedb.DB
	keys  sqlitedb.Keys
	now   func() time.Time
	owned bool
}

var _ inbox.Store = (*Store)(nil)

// Options tune a Store.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Open opens (creating if absent) the database at path.
func Open(path string, opts Options) (*Store, error) {
	db, err := sqlitedb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open inbox: %w", err)
	}
	s, err := New(db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New uses db and runs the migrations the file lacks: it creates the tables
// in a new file and brings a file of an earlier release up to date.
func New(db *sqlitedb.DB, opts Options) (*Store, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	ctx := context.Background()
	if err := db.Migrate(ctx, sqlitedb.KeyTable, sqlitedb.KeySteps); err != nil {
		return nil, fmt.Errorf("open inbox: %w", err)
	}
	if err := db.Migrate(ctx, inboxTables, inboxSteps); err != nil {
		return nil, fmt.Errorf("open inbox: %w", err)
	}
	return &Store{db: db, keys: db.Keys(now), now: now}, nil
}

// DB is the underlying database.
func (s *Store) DB() *sql.DB { return s.db.DB }

// Close closes the database when the Store opened it.
func (s *Store) Close() error {
	if s.owned {
		return s.db.Close()
	}
	return nil
}

// Accept implements inbox.Store. Keys are claimed and committed in one
// statement per window (the transaction is the lease), and the new events
// are inserted with multi-row statements: the per-event work inside the
// write turn is what bounds intake throughput. Every statement's text is
// one of a bounded set, prepared once; the counts by status of the new
// events are not written at all (Stats counts pending events in
// events_due). Accept returns once the commit is durable; it waits for
// the WAL's fsync after giving the write turn back, so the workers'
// transactions run meanwhile. The committer runs one Accept at a time: a
// second writer, whose transaction would run during the first one's
// fsync, measured slower (docs/benchmarks.md).
func (s *Store) Accept(ctx context.Context, items []inbox.Item) (out []inbox.Outcome, err error) {
	if len(items) == 0 {
		return nil, nil
	}
	headers := make([][]byte, len(items))
	for i := range items {
		if headers[i], err = json.Marshal(items[i].Event.Headers); err != nil {
			return nil, fmt.Errorf("inbox: headers of %s: %w", items[i].Event.EventID, err)
		}
	}
	err = s.write(ctx, "accept", func(tx *sql.Tx) error {
		out, err = s.accept(ctx, tx, items, headers)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// accept is Accept's transaction.
func (s *Store) accept(ctx context.Context, tx *sql.Tx, items []inbox.Item, headers [][]byte) ([]inbox.Outcome, error) {
	out := make([]inbox.Outcome, len(items))
	var fresh []int
	counts := intakeCounts{}
	replays, err := guard(ctx, s.db, tx, items, s.now().UnixNano())
	if err != nil {
		return nil, fmt.Errorf("replay guard: %w", err)
	}
	for i, o := range replays {
		out[i] = o
		counts.add(items[i].Event.Source, o.Status)
	}
	for window, idx := range byWindow(items, replays) {
		hashes := make([]dedupe.Hash, len(idx))
		for j, i := range idx {
			hashes[j] = items[i].Event.Hash
		}
		claims, err := s.keys.Claim(ctx, tx, window, true, hashes)
		if err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		for j, c := range claims {
			out[idx[j]] = inbox.Outcome{Status: c.Status, FirstSeen: c.FirstSeen, Expires: c.Expires}
			counts.add(items[idx[j]].Event.Source, c.Status)
			if c.Status == dedupe.New {
				fresh = append(fresh, idx[j])
			}
		}
	}
	received := s.now().UnixNano()
	for _, n := range sqlitedb.Sizes(len(fresh)) {
		if err := s.insert(ctx, tx, items, headers, fresh[:n], received, out); err != nil {
			return nil, fmt.Errorf("insert: %w", err)
		}
		fresh = fresh[n:]
	}
	if err := counts.save(ctx, s.db, tx, received); err != nil {
		return nil, fmt.Errorf("count: %w", err)
	}
	return out, nil
}

// byWindow groups the indexes of the items that are not replays by dedupe
// window; one source, one window, so there is usually one group.
func byWindow(items []inbox.Item, replays map[int]inbox.Outcome) map[time.Duration][]int {
	groups := make(map[time.Duration][]int, 1)
	for i := range items {
		if _, ok := replays[i]; !ok {
			groups[items[i].Window] = append(groups[items[i].Window], i)
		}
	}
	return groups
}

// insert writes the events items[i] for i in idx in one statement and
// stores their ids in out. Hashes are distinct within a batch, so the
// returned hash tells which row got which id. The statement's text depends
// only on len(idx), one of sqlitedb.Sizes, so it is prepared once.
func (s *Store) insert(ctx context.Context, tx *sql.Tx, items []inbox.Item, headers [][]byte, idx []int, received int64, out []inbox.Outcome) error {
	args := make([]any, 0, 15*len(idx))
	at := make(map[dedupe.Hash]int, len(idx))
	for _, i := range idx {
		e := &items[i].Event
		at[e.Hash] = i
		args = append(args, e.Hash[:], e.Scope, e.Source, e.Provider, e.Tenant, e.EventID, e.Type,
			e.EntityType, e.EntityID, e.EntityVersion, e.EntityOrder, e.EntityState,
			e.Payload, string(headers[i]), received)
	}
	q := `INSERT INTO events
		(hash, scope, source, provider, tenant, event_id, event_type, entity_type, entity_id,
		 entity_version, entity_order, entity_state, payload, headers, received_at) VALUES ` +
		sqlitedb.Rows("(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", len(idx)) + ` RETURNING id, hash`
	return s.db.EachRow(ctx, tx, q, args, func(rows *sql.Rows) error {
		var (
			id   int64
			hash []byte
		)
		if err := rows.Scan(&id, &hash); err != nil {
			return err
		}
		var h dedupe.Hash
		copy(h[:], hash)
		out[at[h]].ID = id
		return nil
	})
}

const columns = `id, hash, scope, source, provider, tenant, event_id, event_type, entity_type, entity_id,
	entity_version, entity_order, entity_state, payload, headers, received_at, status,
	attempts, next_attempt_at, last_error, processed_at,
	apply_outcome, apply_from, apply_to, apply_transition, apply_tie, via`

func scanEvent(row interface{ Scan(...any) error }) (inbox.Event, error) {
	var (
		e                    inbox.Event
		hash                 []byte
		headers              string
		received, next, done int64
		status, outcome      string
		applied              inbox.Applied
	)
	err := row.Scan(&e.ID, &hash, &e.Scope, &e.Source, &e.Provider, &e.Tenant, &e.EventID, &e.Type,
		&e.EntityType, &e.EntityID, &e.EntityVersion, &e.EntityOrder, &e.EntityState,
		&e.Payload, &headers, &received, &status,
		&e.Attempts, &next, &e.LastError, &done,
		&outcome, &applied.From, &applied.To, &applied.Transition, &applied.Tie, &e.Via)
	if err != nil {
		return e, err
	}
	copy(e.Hash[:], hash)
	e.ReceivedAt = time.Unix(0, received).UTC()
	e.Status = inbox.Status(status)
	e.NextAttemptAt, e.ProcessedAt = fromNanos(next), fromNanos(done)
	if outcome != "" {
		applied.Outcome = inbox.ApplyOutcome(outcome)
		e.Applied = &applied
	}
	if err := json.Unmarshal([]byte(headers), &e.Headers); err != nil {
		return e, fmt.Errorf("inbox: event %d headers: %w", e.ID, err)
	}
	return e, nil
}

// Get implements inbox.Store.
func (s *Store) Get(ctx context.Context, id int64) (inbox.Event, error) {
	e, err := scanEvent(s.db.QueryRowContext(ctx, `SELECT `+columns+` FROM events WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return e, fmt.Errorf("%w: %d", inbox.ErrNotFound, id)
	}
	if err != nil {
		return e, inbox.Unavailable("get", err)
	}
	return e, nil
}

// InitSetting implements inbox.Store.
func (s *Store) InitSetting(ctx context.Context, name, value string) (string, error) {
	err := s.write(ctx, "init setting", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO settings(name, value) VALUES (?, ?)
			ON CONFLICT(name) DO NOTHING`, name, value)
		return err
	})
	if err != nil {
		return "", err
	}
	var v string
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = ?`, name).Scan(&v); err != nil {
		return "", inbox.Unavailable("read setting", err)
	}
	return v, nil
}
