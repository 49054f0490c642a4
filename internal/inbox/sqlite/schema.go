package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hookgate/hookgate/internal/sqlitedb"
)

// processingColumns are the events columns that processing added after the
// first release. migrate adds the ones a database lacks, so a file written
// by an older hookgate opens unchanged.
var processingColumns = []struct{ name, def string }{
	{"attempts", "INTEGER NOT NULL DEFAULT 0"},
	{"next_attempt_at", "INTEGER NOT NULL DEFAULT 0"},
	{"lease_owner", "TEXT NOT NULL DEFAULT ''"},
	{"lease_until", "INTEGER NOT NULL DEFAULT 0"},
	{"last_error", "TEXT NOT NULL DEFAULT ''"},
	{"processed_at", "INTEGER NOT NULL DEFAULT 0"},
	{"apply_outcome", "TEXT NOT NULL DEFAULT ''"},
	{"apply_from", "TEXT NOT NULL DEFAULT ''"},
	{"apply_to", "TEXT NOT NULL DEFAULT ''"},
	{"apply_transition", "INTEGER NOT NULL DEFAULT 0"},
	{"event_type", "TEXT NOT NULL DEFAULT ''"},
}

// deliveryColumns are the deliveries columns that per-destination
// scheduling added. A file without them has rows whose "failed" meant "the
// last attempt failed"; migrate drops those of unfinished events, which
// then start their delivery over (their attempts are not carried).
var deliveryColumns = []struct{ name, def string }{
	{"source", "TEXT NOT NULL DEFAULT ''"},
	{"next_attempt_at", "INTEGER NOT NULL DEFAULT 0"},
	{"lease_owner", "TEXT NOT NULL DEFAULT ''"},
	{"lease_until", "INTEGER NOT NULL DEFAULT 0"},
}

// processingSchema creates what processing reads and writes besides the
// events columns. The two partial indexes hold only the rows their query
// looks for: events_due the pending events (Lease walks it in id order and
// Stats counts it), events_processed the processed ones by age (Sweep).
// Intake pays for events_due only; an event enters events_processed when it
// is finished. events_hash is dropped: dedupe_keys answers every lookup by
// hash, and each index is one more B-tree write per accepted event.
const processingSchema = `
DROP INDEX IF EXISTS events_hash;
DROP TRIGGER IF EXISTS events_counted;
CREATE INDEX IF NOT EXISTS events_due
	ON events(id, status, next_attempt_at, lease_until, received_at)
	WHERE status IN ('received', 'retry');
CREATE INDEX IF NOT EXISTS events_processed
	ON events(processed_at)
	WHERE status = 'processed';
CREATE TABLE IF NOT EXISTS entities (
	tenant     TEXT    NOT NULL,
	type       TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	version    TEXT    NOT NULL,
	ord        INTEGER NOT NULL,
	state      TEXT    NOT NULL,
	event_id   INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (tenant, type, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS deliveries (
	event_id    INTEGER NOT NULL,
	destination TEXT    NOT NULL,
	status      TEXT    NOT NULL,
	attempts    INTEGER NOT NULL,
	code        INTEGER NOT NULL,
	error       TEXT    NOT NULL,
	at          INTEGER NOT NULL,
	PRIMARY KEY (event_id, destination)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS attempts (
	seq         INTEGER PRIMARY KEY,
	event_id    INTEGER NOT NULL,
	destination TEXT    NOT NULL,
	at          INTEGER NOT NULL,
	duration    INTEGER NOT NULL,
	code        INTEGER NOT NULL,
	error       TEXT    NOT NULL,
	body        TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS attempts_event ON attempts(event_id, seq);
CREATE TABLE IF NOT EXISTS lanes (
	source      TEXT    NOT NULL,
	destination TEXT    NOT NULL,
	state       TEXT    NOT NULL,
	failures    INTEGER NOT NULL,
	until       INTEGER NOT NULL,
	last_error  TEXT    NOT NULL,
	changed_at  INTEGER NOT NULL,
	PRIMARY KEY (source, destination)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counters (
	source     TEXT    NOT NULL PRIMARY KEY,
	accepted   INTEGER NOT NULL DEFAULT 0,
	duplicates INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
`

// statusCounts keeps the number of events per source and status, so Stats
// (which the metrics endpoint reads on every scrape) reads a few rows
// instead of grouping the whole events table, which holds every event of
// the retention period. Triggers keep it in step with every status change
// and delete, whoever makes them; inserts are counted by Accept, once per
// batch and source, since a per-row trigger costs intake a statement per
// event.
const statusCounts = `
CREATE TABLE status_counts (
	source TEXT    NOT NULL,
	status TEXT    NOT NULL,
	n      INTEGER NOT NULL,
	PRIMARY KEY (source, status)
) WITHOUT ROWID;
INSERT INTO status_counts (source, status, n)
	SELECT source, status, count(*) FROM events GROUP BY source, status;
CREATE TRIGGER events_recounted AFTER UPDATE OF status ON events
	WHEN OLD.status IS NOT NEW.status BEGIN
	UPDATE status_counts SET n = n - 1 WHERE source = OLD.source AND status = OLD.status;
	INSERT INTO status_counts (source, status, n) VALUES (NEW.source, NEW.status, 1)
		ON CONFLICT (source, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER events_uncounted AFTER DELETE ON events BEGIN
	UPDATE status_counts SET n = n - 1 WHERE source = OLD.source AND status = OLD.status;
END;
`

// inboxTables is the name under which schema_versions records the inbox
// migrations.
const inboxTables = "inbox"

// inboxSteps are the inbox migrations, in order. A released step never
// changes: a later change of the schema is a step appended here, with a
// test that opens a file of each earlier version.
var inboxSteps = []sqlitedb.Step{
	{Name: "create the inbox, or bring an unversioned file up to date", Up: upgradeUnversioned},
	sqlitedb.Exec("count pending events from events_due", pendingFromIndex),
	sqlitedb.Exec("index what List's filters read", listIndexes),
	sqlitedb.Exec("record ties", recordTies),
	sqlitedb.Exec("keep deaths by time, duplicates by minute, attempts by destination and held lanes", activitySchema),
	sqlitedb.Exec("keep incidents and their notices", incidentsSchema),
	sqlitedb.Exec("keep per-key order of deliveries", orderSchema),
	sqlitedb.Exec("record how events came and keep reconciliation checkpoints", reconcileSchema),
	sqlitedb.Exec("keep the schedules of rated lanes", rateSchema),
}

// activitySchema keeps what the console reads besides the lists. An
// event that dies records when (dead_at, reset by a replay), and the
// partial index events_dead holds the events that have a time of death:
// intake never writes it. Its WHERE clause names dead_at, not the status,
// so List's filter by status never picks it over events_status.
// Duplicates leave no row of their own, so each intake batch that
// answered any adds them to its minute's row of duplicates_by_minute,
// which Sweep keeps for inbox.ActivityKept. attempts_destination reads a
// destination's newest attempts without walking every attempt; a lane's
// held flag is the operator's, apart from the state the circuit records.
const activitySchema = `
ALTER TABLE events ADD COLUMN dead_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX events_dead ON events(dead_at, status) WHERE dead_at > 0;
CREATE TABLE duplicates_by_minute (
	minute INTEGER NOT NULL,
	source TEXT    NOT NULL,
	n      INTEGER NOT NULL,
	PRIMARY KEY (minute, source)
) WITHOUT ROWID;
CREATE INDEX attempts_destination ON attempts(destination, seq);
ALTER TABLE lanes ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
`

// recordTies keeps, beside an event's apply outcome, whether its version
// equalled the stored one. List finds ties without an index of their
// own: events_outcome cannot serve a test of apply_tie, and a partial
// index cannot serve a bound value; a search walks the events newest
// first, as one by provider event id does.
const recordTies = `ALTER TABLE events ADD COLUMN apply_tie INTEGER NOT NULL DEFAULT 0;`

// listIndexes are the indexes List needs besides events_source and
// events_status, so that those filters read an index rather than the
// events table, which holds every event of the retention period: by
// tenant (equality keeps id order, so no sort), by time received (in the
// order a time range is listed: with the rowid, received_at then id), and
// by apply outcome. Each grows at a few places (the newest ids and times),
// so intake's commits write few extra pages.
//
// Provider event id and key have no index here: their values are random,
// so each index would add a page write at a random place to every accepted
// event, about halving intake's accept rate. A search by either walks the
// events newest first and stops at a page of matches: on 1M events, 0.3 s
// at worst, for an operator's search. PostgreSQL, for several nodes, keeps
// both indexes.
const listIndexes = `
CREATE INDEX IF NOT EXISTS events_tenant ON events(tenant, id);
CREATE INDEX IF NOT EXISTS events_received ON events(received_at);
CREATE INDEX IF NOT EXISTS events_outcome ON events(apply_outcome, id);
`

// pendingFromIndex stops counting pending events (received, retry) in
// status_counts, which cost intake a write to one hot row per batch: Stats
// counts them in the partial index events_due, which every pending event is
// in anyway and which gains the source column for it. The triggers keep
// counting the other statuses.
const pendingFromIndex = `
DROP INDEX events_due;
CREATE INDEX events_due
	ON events(id, status, next_attempt_at, lease_until, received_at, source)
	WHERE status IN ('received', 'retry');
DELETE FROM status_counts WHERE status IN ('received', 'retry');
DROP TRIGGER events_recounted;
CREATE TRIGGER events_recounted AFTER UPDATE OF status ON events
	WHEN OLD.status IS NOT NEW.status BEGIN
	UPDATE status_counts SET n = n - 1 WHERE source = OLD.source AND status = OLD.status;
	INSERT INTO status_counts (source, status, n)
		SELECT NEW.source, NEW.status, 1 WHERE NEW.status NOT IN ('received', 'retry')
		ON CONFLICT (source, status) DO UPDATE SET n = n + 1;
END;
`

// upgradeUnversioned creates the inbox tables in a new file, or brings a
// file written before migrations were versioned up to date: files of those
// releases record no version, so it finds what each lacks from the file
// itself (a missing column, table or index) and adds only that.
func upgradeUnversioned(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return err
	}
	have, err := tableColumns(ctx, tx, "events")
	if err != nil {
		return err
	}
	for _, c := range processingColumns {
		if have[c.name] {
			continue
		}
		if _, err := tx.ExecContext(ctx, "ALTER TABLE events ADD COLUMN "+c.name+" "+c.def); err != nil {
			return fmt.Errorf("add column %s: %w", c.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, processingSchema); err != nil {
		return err
	}
	if err := migrateDeliveries(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, guardSchema); err != nil {
		return fmt.Errorf("replay guard: %w", err)
	}
	var counted int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema
		WHERE type = 'table' AND name = 'status_counts'`).Scan(&counted); err != nil {
		return err
	}
	if counted == 0 {
		if _, err := tx.ExecContext(ctx, statusCounts); err != nil {
			return fmt.Errorf("count events by status: %w", err)
		}
	}
	return nil
}

// deliveriesDue is the partial index a lane's lease walks: the pending
// deliveries of one (source, destination), soonest due first.
const deliveriesDue = `CREATE INDEX IF NOT EXISTS deliveries_due
	ON deliveries(source, destination, next_attempt_at, event_id, lease_until)
	WHERE status = 'pending'`

// migrateDeliveries adds the scheduling columns to deliveries, and the
// index over them.
func migrateDeliveries(ctx context.Context, tx *sql.Tx) error {
	have, err := tableColumns(ctx, tx, "deliveries")
	if err != nil {
		return err
	}
	if !have["source"] {
		if _, err := tx.ExecContext(ctx, `DELETE FROM deliveries WHERE status != 'delivered'
			AND event_id IN (SELECT id FROM events WHERE status IN ('received', 'retry'))`); err != nil {
			return fmt.Errorf("reset deliveries: %w", err)
		}
	}
	for _, c := range deliveryColumns {
		if have[c.name] {
			continue
		}
		if _, err := tx.ExecContext(ctx, "ALTER TABLE deliveries ADD COLUMN "+c.name+" "+c.def); err != nil {
			return fmt.Errorf("add column %s: %w", c.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, deliveriesDue); err != nil {
		return err
	}
	return nil
}

// tableColumns returns the names of table's columns.
func tableColumns(ctx context.Context, tx *sql.Tx, table string) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		have[name] = true
	}
	return have, rows.Err()
}

// SchemaVersion is the number of inbox migrations the file has had: the
// version `hookgate migrate` reports.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT version FROM schema_versions WHERE name = ?`, inboxTables).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("inbox: schema version: %w", err)
	}
	return v, nil
}
