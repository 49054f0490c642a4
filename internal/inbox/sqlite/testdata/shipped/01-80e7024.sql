-- The schema hookgate wrote into a new file at commit 80e7024
-- (hookgate serve: intake handler, group committer with single-flight, SQLite inbox, CLI (ser...).
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
);
CREATE INDEX events_hash ON events(hash);
CREATE INDEX events_source ON events(source, id);
CREATE INDEX events_status ON events(status, id);
CREATE TABLE settings (
	name  TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;
