package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookgate/hookgate/internal/inbox"
)

// Store is the PostgreSQL inbox. It is safe for concurrent use, and any
// number of Stores, in one process or on many nodes, may share a database.
type Store struct {
	// writers is the number of accept batches in flight (AcceptWriters).
	writers int
	pool    *pgxpool.Pool
	now     func() time.Time
	owned   bool
	lead    leader
	// session is where the parts that need a session of their own
	// connect (Options.Session); nil when there is none.
	session *pgx.ConnConfig
	leadFor time.Duration
	log     *slog.Logger
	analyze analyzer
	// wake, while Watch runs, is its wake: Accept calls it once the
	// batch that stored new events has committed.
	wake atomic.Pointer[func()]
}

var _ inbox.Store = (*Store)(nil)

// Options tune a Store.
type Options struct {
	// Now is the clock. Nil, the production setting, means the database's
	// now(): every node then reads one clock, so skew between the nodes'
	// clocks never moves a lease, a window, a retry or the retention.
	// Tests pass a manual clock.
	Now func() time.Time
	// AcceptWriters is how many accept batches a node keeps in flight at
	// once; zero means DefaultAcceptWriters.
	AcceptWriters int
	// Session is a connection string that reaches the database directly,
	// bypassing any pooler, for what needs a session of its own: the
	// lead as a session lock, and Watch's LISTEN. Empty, Open uses its
	// url when that reaches the database directly; otherwise, or with
	// New, the lead is a lease row and Watch hears no other node's
	// events (the workers poll for them).
	Session string
	// LeadFor is how long a lease on the lead lasts without a Session;
	// zero means DefaultLeadFor. The leader renews it with each Lead, so
	// it must exceed the time between two.
	LeadFor time.Duration
	// Logger receives the errors of what the Store does in the
	// background (the analyze of tables that outgrew their statistics);
	// nil discards them.
	Logger *slog.Logger
}

// DefaultAcceptWriters is two accept batches in flight where the node has
// more than two CPUs, so that one batch's round trip and commit overlap
// the next one's, and one otherwise: on two cores the node's own HTTP and
// verification fill them, and a second batch only splits the group commit
// (measured on such a machine, PostgreSQL beside the node: one writer
// 8,500-8,900 accepts/s at p99 16 ms, two 7,300-7,700 at p99 19-21 ms).
func DefaultAcceptWriters() int {
	if runtime.NumCPU() > 2 {
		return 2
	}
	return 1
}

// ErrRepeatedHash is returned by Accept for a batch that carries one hash
// twice, which the inbox.Store contract rules out.
var ErrRepeatedHash = errors.New("inbox/postgres: hash repeated in one batch")

// DefaultPingTimeout bounds the pool's health ping of an idle connection
// when the URL sets no pool_ping_timeout.
const DefaultPingTimeout = 2 * time.Second

// Open connects to the database at url (a PostgreSQL connection string),
// creates or migrates the inbox tables, and returns a Store whose Close
// closes the connections. A ping of an idle connection
// before it is lent is bounded by pool_ping_timeout in url, or
// DefaultPingTimeout.
//
// Open first asks whether url reaches the server directly or through a
// pooler (see pooled). Through a pooler, unless url chooses pgx's
// default_query_exec_mode itself, statements run in the cache_describe
// mode: no named prepared statement outlives its transaction, so a
// transaction pooler may lend each one another server connection.
// Directly, statements are prepared once per connection, and without
// opts.Session url itself is the session for the lead and Watch.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open inbox: %w", err)
	}
	viaPooler, err := pooled(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return nil, inbox.Fail(ctx, "open", err)
	}
	switch {
	case viaPooler && !setsExecMode(url):
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	case !viaPooler && opts.Session == "":
		opts.Session = url
	}
	if cfg.PingTimeout <= 0 {
		// The pool pings a connection idle for a second before lending
		// it; a ping abandoned by its caller runs on for up to a minute
		// against a database that hangs, and Close waits for it.
		cfg.PingTimeout = DefaultPingTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open inbox: %w", err)
	}
	s, err := New(ctx, pool, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New uses pool, creating the inbox tables or migrating them to this
// version's schema. The caller keeps pool and closes it after the Store.
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Store, error) {
	s := &Store{pool: pool, now: opts.Now, writers: opts.AcceptWriters, leadFor: opts.LeadFor,
		lead: leader{holder: holderName()}, log: opts.Logger}
	if opts.Session != "" {
		cfg, err := pgx.ParseConfig(opts.Session)
		if err != nil {
			return nil, fmt.Errorf("open inbox: session: %w", err)
		}
		s.session = cfg
	}
	if s.writers <= 0 {
		s.writers = DefaultAcceptWriters()
	}
	if s.leadFor <= 0 {
		s.leadFor = DefaultLeadFor
	}
	if err := migrate(ctx, pool); err != nil {
		return nil, inbox.Fail(ctx, "open: migrate", err)
	}
	return s, nil
}

// pooled reports whether cfg reaches the database through a pooler
// (PgBouncer in any mode, RDS Proxy, a managed service's pooler): the
// process id in the key the server's startup answer gave is not the
// backend that runs a query, as a pooler hands out keys of its own. A
// connection made for the question is closed before pooled returns.
func pooled(ctx context.Context, cfg *pgx.ConnConfig) (bool, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var pid int64
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()", pgx.QueryExecModeSimpleProtocol).Scan(&pid); err != nil {
		return false, err
	}
	return pid != int64(conn.PgConn().PID()), nil
}

// setsExecMode reports whether the connection string url chooses pgx's
// default_query_exec_mode itself.
func setsExecMode(url string) bool {
	return strings.Contains(url, "default_query_exec_mode=")
}

var _ inbox.ParallelAcceptor = (*Store)(nil)

// AcceptWriters implements inbox.ParallelAcceptor (see
// Options.AcceptWriters). The unique keys keep concurrent batches apart.
func (s *Store) AcceptWriters() int { return s.writers }

// Pool is the connection pool the Store uses.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool when the Store opened it.
func (s *Store) Close() error {
	s.analyze.stop()
	s.resign()
	if s.owned {
		s.pool.Close()
	}
	return nil
}

// clock is the value of the $1 that every statement reading the time
// passes to coalesce($1::timestamptz, now()): NULL, so that the database's
// clock decides, unless Options.Now was set.
func (s *Store) clock() any {
	if s.now == nil {
		return nil
	}
	return s.now()
}

// tx runs fn in a transaction, committed if fn succeeds. Errors go through
// fail.
func (s *Store) tx(ctx context.Context, op string, fn func(pgx.Tx) error) error {
	if err := pgx.BeginFunc(ctx, s.pool, fn); err != nil {
		return inbox.Fail(ctx, op, err)
	}
	return nil
}

// text is s as PostgreSQL's text can hold it: NUL and bytes that are not
// UTF-8 become U+FFFD. A sender can put either in a key part (a JSON
// "\u0000", a header's raw bytes) and a destination in its answer; the
// database would refuse the whole statement, and so a whole batch, for
// one such string. Stored names and messages are for reading; the key's
// hash, computed from the original, still decides duplicates.
func text(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// texts applies text to each of ss in place and returns ss.
func texts(ss []string) []string {
	for i := range ss {
		ss[i] = text(ss[i])
	}
	return ss
}

// micros is d in whole microseconds, PostgreSQL's resolution; statements
// turn it into an interval with $n::bigint * interval '1 microsecond'.
func micros(d time.Duration) int64 { return d.Microseconds() }

// ts is t as a timestamptz; the zero time is '-infinity', the columns'
// "none".
func ts(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}

// fromTS is the time of a timestamptz column: the zero time for
// '-infinity' (or NULL), UTC otherwise.
func fromTS(t pgtype.Timestamptz) time.Time {
	if !t.Valid || t.InfinityModifier != pgtype.Finite {
		return time.Time{}
	}
	return t.Time.UTC()
}

// columnNames are the inbox_events columns scanEvent reads, in its order.
var columnNames = []string{"id", "hash", "scope", "source", "provider", "tenant", "event_id", "event_type",
	"entity_type", "entity_id", "entity_version", "entity_order", "entity_state", "payload", "headers",
	"received_at", "status", "attempts", "next_attempt_at", "last_error", "processed_at",
	"apply_outcome", "apply_from", "apply_to", "apply_transition", "apply_tie", "via"}

var (
	// columns is the select list of scanEvent.
	columns = strings.Join(columnNames, ", ")
	// eventColumns is columns qualified by the alias e.
	eventColumns = "e." + strings.Join(columnNames, ", e.")
)

// scanEvent reads columns, followed by extra destinations.
func scanEvent(row pgx.Row, extra ...any) (inbox.Event, error) {
	var (
		e                    inbox.Event
		hash, headers        []byte
		received, next, done pgtype.Timestamptz
		status, outcome      string
		applied              inbox.Applied
	)
	err := row.Scan(append([]any{&e.ID, &hash, &e.Scope, &e.Source, &e.Provider, &e.Tenant, &e.EventID, &e.Type,
		&e.EntityType, &e.EntityID, &e.EntityVersion, &e.EntityOrder, &e.EntityState,
		&e.Payload, &headers, &received, &status,
		&e.Attempts, &next, &e.LastError, &done,
		&outcome, &applied.From, &applied.To, &applied.Transition, &applied.Tie, &e.Via}, extra...)...)
	if err != nil {
		return e, err
	}
	copy(e.Hash[:], hash)
	e.ReceivedAt = fromTS(received)
	e.Status = inbox.Status(status)
	e.NextAttemptAt, e.ProcessedAt = fromTS(next), fromTS(done)
	if outcome != "" {
		applied.Outcome = inbox.ApplyOutcome(outcome)
		e.Applied = &applied
	}
	if err := json.Unmarshal(headers, &e.Headers); err != nil {
		return e, fmt.Errorf("inbox: event %d headers: %w", e.ID, err)
	}
	return e, nil
}

// Get implements inbox.Store.
func (s *Store) Get(ctx context.Context, id int64) (inbox.Event, error) {
	e, err := scanEvent(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM inbox_events WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return e, fmt.Errorf("%w: %d", inbox.ErrNotFound, id)
	}
	if err != nil {
		return e, inbox.Fail(ctx, "get", err)
	}
	return e, nil
}

// collectEvents reads every row of rows with scanEvent and closes rows.
func collectEvents(rows pgx.Rows) ([]inbox.Event, error) {
	defer rows.Close()
	var events []inbox.Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return events, rows.Err()
}

// InitSetting implements inbox.Store. The read is a statement of its own,
// so it sees a value another node committed while the insert waited.
func (s *Store) InitSetting(ctx context.Context, name, value string) (string, error) {
	if _, err := s.pool.Exec(ctx, `INSERT INTO inbox_settings (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO NOTHING`, name, value); err != nil {
		return "", inbox.Fail(ctx, "init setting", err)
	}
	var v string
	if err := s.pool.QueryRow(ctx, `SELECT value FROM inbox_settings WHERE name = $1`, name).Scan(&v); err != nil {
		return "", inbox.Fail(ctx, "read setting", err)
	}
	return v, nil
}
