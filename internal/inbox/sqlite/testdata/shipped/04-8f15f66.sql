-- The schema hookgate wrote into a new file at commit 8f15f66
-- (inbox/sqlite: status counts kept by triggers so Stats reads a few rows, not the events tab...).
-- Reproduce: build that commit, open a new file with inbox/sqlite.Open, sqlite3 FILE .schema
CREATE TABLE dedupe_keys (
		hash       BLOB    NOT NULL PRIMARY KEY CHECK (length(hash) = 16),
		token      INTEGER NOT NULL,
		committed  INTEGER NOT NULL CHECK (committed IN (0, 1)),
		first_seen INTEGER NOT NULL,
		expires    INTEGER NOT NULL
	) WITHOUT ROWID, STRICT;
CREATE INDEX dedupe_keys_expires ON dedupe_keys (expires);
CREATE TABLE events (
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
, attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER NOT NULL DEFAULT 0, lease_owner TEXT NOT NULL DEFAULT '', lease_until INTEGER NOT NULL DEFAULT 0, last_error TEXT NOT NULL DEFAULT '', processed_at INTEGER NOT NULL DEFAULT 0, apply_outcome TEXT NOT NULL DEFAULT '', apply_from TEXT NOT NULL DEFAULT '', apply_to TEXT NOT NULL DEFAULT '', apply_transition INTEGER NOT NULL DEFAULT 0);
CREATE INDEX events_source ON events(source, id);
CREATE INDEX events_status ON events(status, id);
CREATE TABLE settings (
	name  TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX events_due
	ON events(id, status, next_attempt_at, lease_until, received_at)
	WHERE status IN ('received', 'retry');
CREATE INDEX events_processed
	ON events(processed_at)
	WHERE status = 'processed';
CREATE TABLE entities (
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
CREATE TABLE deliveries (
	event_id    INTEGER NOT NULL,
	destination TEXT    NOT NULL,
	status      TEXT    NOT NULL,
	attempts    INTEGER NOT NULL,
	code        INTEGER NOT NULL,
	error       TEXT    NOT NULL,
	at          INTEGER NOT NULL,
	PRIMARY KEY (event_id, destination)
) WITHOUT ROWID;
CREATE TABLE counters (
	source     TEXT    NOT NULL PRIMARY KEY,
	accepted   INTEGER NOT NULL DEFAULT 0,
	duplicates INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE status_counts (
	source TEXT    NOT NULL,
	status TEXT    NOT NULL,
	n      INTEGER NOT NULL,
	PRIMARY KEY (source, status)
) WITHOUT ROWID;
CREATE TRIGGER events_counted AFTER INSERT ON events BEGIN
	INSERT INTO status_counts (source, status, n) VALUES (NEW.source, NEW.status, 1)
		ON CONFLICT (source, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER events_recounted AFTER UPDATE OF status ON events
	WHEN OLD.status IS NOT NEW.status BEGIN
	UPDATE status_counts SET n = n - 1 WHERE source = OLD.source AND status = OLD.status;
	INSERT INTO status_counts (source, status, n) VALUES (NEW.source, NEW.status, 1)
		ON CONFLICT (source, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER events_uncounted AFTER DELETE ON events BEGIN
	UPDATE status_counts SET n = n - 1 WHERE source = OLD.source AND status = OLD.status;
END;
