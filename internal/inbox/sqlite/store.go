package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	dsqlite "github.com/hookgate/hookgate/dedupe/sqlite"
	"github.com/hookgate/hookgate/internal/inbox"
)


// claimLease bounds a claim that lives only inside one transaction: the
// claim and its commit are written together, so no lease outlives it.
const claimLease = time.Minute

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
CREATE INDEX IF NOT EXISTS events_hash ON events(hash);
CREATE INDEX IF NOT EXISTS events_source ON events(source, id);
CREATE INDEX IF NOT EXISTS events_status ON events(status, id);
CREATE TABLE IF NOT EXISTS settings (
	name  TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;
`

// Store is the SQLite inbox.
type Store struct {
	db    *sql.DB
	keys  *dsqlite.Store
	now   func() time.Time
	owned bool
}

// Options tune a Store.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Open opens (creating if absent) the database at path.
func Open(path string, opts Options) (*Store, error) {
	db, err := dsqlite.OpenDB(path)
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

// New uses db, which must come from dedupe/sqlite.OpenDB, and creates the
// tables it needs.
func New(db *sql.DB, opts Options) (*Store, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	keys, err := dsqlite.New(db, dsqlite.Options{Now: now})
	if err != nil {
		return nil, fmt.Errorf("open inbox: %w", err)
	}
	if _, err := db.Exec(schema); err != nil {
		return nil, fmt.Errorf("open inbox: migrate: %w", err)
	}
	return &Store{db: db, keys: keys, now: now}, nil
}

// DB is the underlying database.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database when the Store opened it.
func (s *Store) Close() error {
	if s.owned {
		return s.db.Close()
	}
	return nil
}

func unavailable(op string, err error) error {
	if errors.Is(err, dedupe.ErrUnavailable) {
		return fmt.Errorf("inbox: %s: %w", op, err)
	}
	return fmt.Errorf("inbox: %s: %w: %w", op, dedupe.ErrUnavailable, err)
}

// Accept implements inbox.Store.
func (s *Store) Accept(ctx context.Context, items []inbox.Item) (out []inbox.Outcome, err error) {
	if len(items) == 0 {
		return nil, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, unavailable("begin", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	keys := s.keys.Tx(tx)
	hashes := make([]dedupe.Hash, len(items))
	for i := range items {
		hashes[i] = items[i].Event.Hash
	}
	claims, err := keys.Claim(ctx, claimLease, hashes...)
	if err != nil {
		return nil, unavailable("claim", err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO events
		(hash, scope, source, provider, tenant, event_id, entity_type, entity_id,
		 entity_version, entity_order, entity_state, payload, headers, received_at, status)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id`)
	if err != nil {
		return nil, unavailable("prepare", err)
	}
	defer ins.Close()
	received := s.now().UnixNano()
	out = make([]inbox.Outcome, len(items))
	byWindow := map[time.Duration][]dedupe.Lease{}
	for i, c := range claims {
		out[i] = inbox.Outcome{Status: c.Status, FirstSeen: c.FirstSeen, Expires: c.Expires}
		if c.Status != dedupe.New {
			continue
		}
		e := &items[i].Event
		headers, err := json.Marshal(e.Headers)
		if err != nil {
			return nil, fmt.Errorf("inbox: headers of %s: %w", e.EventID, err)
		}
		if err := ins.QueryRowContext(ctx, e.Hash[:], e.Scope, e.Source, e.Provider, e.Tenant, e.EventID,
			e.EntityType, e.EntityID, e.EntityVersion, e.EntityOrder, e.EntityState,
			e.Payload, string(headers), received, string(inbox.StatusReceived)).Scan(&out[i].ID); err != nil {
			return nil, unavailable("insert", err)
		}
		byWindow[items[i].Window] = append(byWindow[items[i].Window], c.Lease)
	}
	for window, leases := range byWindow {
		if err := keys.Commit(ctx, window, leases...); err != nil {
			return nil, unavailable("commit keys", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, unavailable("commit", err)
	}
	return out, nil
}

const columns = `id, hash, scope, source, provider, tenant, event_id, entity_type, entity_id,
	entity_version, entity_order, entity_state, payload, headers, received_at, status`

func scanEvent(row interface{ Scan(...any) error }) (inbox.Event, error) {
	var (
		e        inbox.Event
		hash     []byte
		headers  string
		received int64
		status   string
	)
	err := row.Scan(&e.ID, &hash, &e.Scope, &e.Source, &e.Provider, &e.Tenant, &e.EventID,
		&e.EntityType, &e.EntityID, &e.EntityVersion, &e.EntityOrder, &e.EntityState,
		&e.Payload, &headers, &received, &status)
	if err != nil {
		return e, err
	}
	copy(e.Hash[:], hash)
	e.ReceivedAt = time.Unix(0, received).UTC()
	e.Status = inbox.Status(status)
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
		return e, unavailable("get", err)
	}
	return e, nil
}

// List implements inbox.Store.
func (s *Store) List(ctx context.Context, f inbox.Filter) ([]inbox.Event, error) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if f.Source != "" {
		add("source = ?", f.Source)
	}
	if f.Tenant != "" {
		add("tenant = ?", f.Tenant)
	}
	if f.Status != "" {
		add("status = ?", string(f.Status))
	}
	if f.BeforeID > 0 {
		add("id < ?", f.BeforeID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = inbox.DefaultLimit
	}
	q := `SELECT ` + columns + ` FROM events`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, unavailable("list", err)
	}
	defer rows.Close()
	var events []inbox.Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, unavailable("list", err)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable("list", err)
	}
	return events, nil
}

// InitSetting implements inbox.Store.
func (s *Store) InitSetting(ctx context.Context, name, value string) (string, error) {
	if _, err := s.db.ExecContext(ctx, `INSERT INTO settings(name, value) VALUES (?, ?)
		ON CONFLICT(name) DO NOTHING`, name, value); err != nil {
		return "", unavailable("init setting", err)
	}
	var v string
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = ?`, name).Scan(&v); err != nil {
		return "", unavailable("read setting", err)
	}
	return v, nil
}
