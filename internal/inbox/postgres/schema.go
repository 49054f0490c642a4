package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookgate/hookgate/internal/inbox"
)

// migrationLock is the key of the advisory lock migrate holds, so that
// nodes starting at once apply each version once: the others wait, then
// find it recorded.
const migrationLock int64 = 0x686f6f6b67617465 // "hookgate"

// migrations are the schema versions in order; migrations[i] is version
// i+1. They are forward-only: a released version is never edited, a
// change is a new one.
var migrations = []string{schemaV1, schemaV2, schemaV3, schemaV4, schemaV5, schemaV6, schemaV7, schemaV8, schemaV9}

// schemaV1 is the first schema. Times are timestamptz; '-infinity' stands
// for "none" (no lease, no next attempt, not processed), so the columns
// are NOT NULL and a comparison with the clock needs no NULL case.
//
// Headers are json, not jsonb: they are stored once and read whole, and
// jsonb refuses the escape "\u0000" that a header value may need.
//
// Every table starts with inbox_ so that the inbox can share a database
// (and a search_path) with the public dedupe/postgres store.
const schemaV1 = `
CREATE TABLE inbox_keys (
	hash       bytea       PRIMARY KEY CHECK (length(hash) = 16),
	first_seen timestamptz NOT NULL,
	expires    timestamptz NOT NULL
);
CREATE INDEX inbox_keys_expires ON inbox_keys (expires);

CREATE TABLE inbox_digests (
	digest     bytea       PRIMARY KEY CHECK (length(digest) = 16),
	first_seen timestamptz NOT NULL,
	expires    timestamptz NOT NULL
);
CREATE INDEX inbox_digests_expires ON inbox_digests (expires);

CREATE TABLE inbox_events (
	id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	hash             bytea       NOT NULL,
	scope            text        NOT NULL,
	source           text        NOT NULL,
	provider         text        NOT NULL,
	tenant           text        NOT NULL,
	event_id         text        NOT NULL,
	event_type       text        NOT NULL,
	entity_type      text        NOT NULL,
	entity_id        text        NOT NULL,
	entity_version   text        NOT NULL,
	entity_order     bigint      NOT NULL,
	entity_state     text        NOT NULL,
	payload          bytea       NOT NULL,
	headers          json        NOT NULL,
	received_at      timestamptz NOT NULL,
	status           text        NOT NULL DEFAULT 'received',
	attempts         integer     NOT NULL DEFAULT 0,
	next_attempt_at  timestamptz NOT NULL DEFAULT '-infinity',
	lease_owner      text        NOT NULL DEFAULT '',
	lease_until      timestamptz NOT NULL DEFAULT '-infinity',
	last_error       text        NOT NULL DEFAULT '',
	processed_at     timestamptz NOT NULL DEFAULT '-infinity',
	apply_outcome    text        NOT NULL DEFAULT '',
	apply_from       text        NOT NULL DEFAULT '',
	apply_to         text        NOT NULL DEFAULT '',
	apply_transition boolean     NOT NULL DEFAULT false
);
-- List pages by source or status, newest first.
CREATE INDEX inbox_events_source ON inbox_events (source, id);
CREATE INDEX inbox_events_status ON inbox_events (status, id);
-- Lease walks the events waiting for a worker in id order.
CREATE INDEX inbox_events_due ON inbox_events (id) WHERE status IN ('received', 'retry');
-- Stats finds the oldest delivering event.
CREATE INDEX inbox_events_delivering ON inbox_events (id) WHERE status = 'delivering';
-- Sweep finds processed events by age.
CREATE INDEX inbox_events_processed ON inbox_events (processed_at) WHERE status = 'processed';

CREATE TABLE inbox_entities (
	tenant     text        NOT NULL,
	type       text        NOT NULL,
	id         text        NOT NULL,
	version    text        NOT NULL,
	ord        bigint      NOT NULL,
	state      text        NOT NULL,
	event_id   bigint      NOT NULL,
	updated_at timestamptz NOT NULL,
	PRIMARY KEY (tenant, type, id)
);

CREATE TABLE inbox_deliveries (
	event_id        bigint      NOT NULL,
	destination     text        NOT NULL,
	source          text        NOT NULL,
	status          text        NOT NULL,
	attempts        integer     NOT NULL DEFAULT 0,
	next_attempt_at timestamptz NOT NULL DEFAULT '-infinity',
	code            integer     NOT NULL DEFAULT 0,
	error           text        NOT NULL DEFAULT '',
	at              timestamptz NOT NULL DEFAULT '-infinity',
	lease_owner     text        NOT NULL DEFAULT '',
	lease_until     timestamptz NOT NULL DEFAULT '-infinity',
	PRIMARY KEY (event_id, destination)
);
-- A lane's dispatcher walks its pending deliveries, soonest due first.
CREATE INDEX inbox_deliveries_due ON inbox_deliveries (source, destination, next_attempt_at, event_id)
	WHERE status = 'pending';

CREATE TABLE inbox_attempts (
	seq         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	event_id    bigint      NOT NULL,
	destination text        NOT NULL,
	at          timestamptz NOT NULL,
	duration    bigint      NOT NULL,
	code        integer     NOT NULL,
	error       text        NOT NULL,
	body        text        NOT NULL
);
CREATE INDEX inbox_attempts_event ON inbox_attempts (event_id, seq);

CREATE TABLE inbox_lanes (
	source      text        NOT NULL,
	destination text        NOT NULL,
	state       text        NOT NULL,
	failures    integer     NOT NULL,
	until       timestamptz NOT NULL,
	last_error  text        NOT NULL,
	changed_at  timestamptz NOT NULL,
	PRIMARY KEY (source, destination)
);

-- Counts per source of events by status and of intake outcomes
-- ('accepted', 'duplicates'), kept in shards: each database session adds
-- to the rows of its own backend pid, so no row is written by every
-- accept or finish across nodes, and Sweep folds the rows of sessions
-- that ended into shard 0. A counter's value is the sum of its shards.
CREATE TABLE inbox_counts (
	source  text    NOT NULL,
	counter text    NOT NULL,
	shard   integer NOT NULL,
	n       bigint  NOT NULL,
	PRIMARY KEY (source, counter, shard)
);

CREATE TABLE inbox_settings (
	name  text PRIMARY KEY,
	value text NOT NULL
);
`

// schemaV2 adds the indexes List's filters read, so that none scans
// inbox_events, which holds every event of the retention period: by
// tenant, provider event id and key (equality keeps id order), by time
// received, and by apply outcome. Built inside the migration's
// transaction, they hold writes to inbox_events (other nodes' accepts
// wait, they do not fail) for as long as they take on a large table.
const schemaV2 = `
CREATE INDEX IF NOT EXISTS inbox_events_tenant ON inbox_events (tenant, id);
CREATE INDEX IF NOT EXISTS inbox_events_event_id ON inbox_events (event_id, id);
CREATE INDEX IF NOT EXISTS inbox_events_hash ON inbox_events (hash, id);
CREATE INDEX IF NOT EXISTS inbox_events_received ON inbox_events (received_at, id);
CREATE INDEX IF NOT EXISTS inbox_events_outcome ON inbox_events (apply_outcome, id);
`

// schemaV3 keeps, beside an event's apply outcome, whether its version
// equalled the stored one (a tie), and indexes the ties for List: a
// partial index, which intake never writes (an event is not a tie until
// it is applied). A column with a constant default is added without
// rewriting the table.
const schemaV3 = `
ALTER TABLE inbox_events ADD COLUMN apply_tie boolean NOT NULL DEFAULT false;
CREATE INDEX inbox_events_tie ON inbox_events (id) WHERE apply_tie;
`

// schemaV4 holds the lease on the lead of a node without a session of its
// own (one row at most: id is always true).
const schemaV4 = `
CREATE TABLE inbox_leader (
	id     boolean     PRIMARY KEY DEFAULT true CHECK (id),
	holder text        NOT NULL,
	until  timestamptz NOT NULL
);
`

// schemaV5 keeps what the console reads besides the lists. An event that
// dies records when (dead_at, reset by a replay), and the partial index
// inbox_events_dead holds the events that have a time of death: intake
// never writes it. Its WHERE clause names dead_at, not the status, so
// List's filter by status never picks it over inbox_events_status.
// Duplicates leave no row of their own, so an accept that answered any
// adds them to its minute's row in inbox_duplicates, sharded by session
// as inbox_counts is; Sweep keeps them for inbox.ActivityKept.
// inbox_attempts_destination reads a destination's newest attempts
// without walking every attempt (built in the migration's transaction,
// it holds the attempt log's writes while it is built); a lane's held
// flag is the operator's, apart from the state the circuit records. The
// added columns have constant defaults, so no table is rewritten.
const schemaV5 = `
ALTER TABLE inbox_events ADD COLUMN dead_at timestamptz NOT NULL DEFAULT '-infinity';
CREATE INDEX inbox_events_dead ON inbox_events (dead_at, status) WHERE dead_at > '-infinity';
CREATE TABLE inbox_duplicates (
	minute timestamptz NOT NULL,
	source text        NOT NULL,
	shard  integer     NOT NULL,
	n      bigint      NOT NULL,
	PRIMARY KEY (minute, source, shard)
);
CREATE INDEX inbox_attempts_destination ON inbox_attempts (destination, seq);
ALTER TABLE inbox_lanes ADD COLUMN held boolean NOT NULL DEFAULT false;
`

// migrate brings the database to the newest version in one transaction
// under an advisory lock: nodes that start at once queue on the lock, and
// each version is applied once and recorded in inbox_schema_migrations.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return migrateTo(ctx, pool, migrations)
}

// migrateTo brings the database to version len(steps), steps being the
// first versions of migrations.
func migrateTo(ctx context.Context, pool *pgxpool.Pool, steps []string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS inbox_schema_migrations (
			version    integer     PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM inbox_schema_migrations`).Scan(&have); err != nil {
			return err
		}
		if have > len(steps) {
			return fmt.Errorf("database schema is version %d, newer than this hookgate's %d", have, len(steps))
		}
		for v := have + 1; v <= len(steps); v++ {
			if _, err := tx.Exec(ctx, steps[v-1]); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO inbox_schema_migrations (version) VALUES ($1)`, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// SchemaVersion is the newest schema version the database has had: the
// version `hookgate migrate` reports.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM inbox_schema_migrations`).Scan(&v); err != nil {
		return 0, inbox.Fail(ctx, "schema version", err)
	}
	return v, nil
}
