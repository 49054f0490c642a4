package sqlite

// incidentsSchema keeps the alerting's incidents and the notices queued
// for them. Times are Unix nanoseconds, as elsewhere in the file;
// resolved_at and reminded_at are NULL until the incident ends and until
// its first reminder, so that incidents_open holds only the open ones and
// its uniqueness lets one incident of a key be open at a time, whichever
// process observes it. incident_notices_due holds the pending notices in
// the order LeaseNotices takes them.
//
// incident_id names an incidents row without a foreign key, as the
// file's other tables name their events: the store writes a notice only
// in the transaction that opened or changed its incident.
const incidentsSchema = `
CREATE TABLE incidents (
	id          INTEGER PRIMARY KEY,
	kind        TEXT    NOT NULL,
	source      TEXT    NOT NULL,
	destination TEXT    NOT NULL,
	opened_at   INTEGER NOT NULL,
	resolved_at INTEGER,
	seen_at     INTEGER NOT NULL,
	reminded_at INTEGER,
	counts      TEXT    NOT NULL,
	last_error  TEXT    NOT NULL
);
CREATE UNIQUE INDEX incidents_open ON incidents(kind, source, destination)
	WHERE resolved_at IS NULL;
CREATE TABLE incident_notices (
	id          INTEGER PRIMARY KEY,
	incident_id INTEGER NOT NULL,
	change      TEXT    NOT NULL,
	channel     TEXT    NOT NULL,
	body        BLOB    NOT NULL,
	status      TEXT    NOT NULL DEFAULT 'pending',
	attempts    INTEGER NOT NULL DEFAULT 0,
	next_at     INTEGER NOT NULL DEFAULT 0,
	lease_owner TEXT    NOT NULL DEFAULT '',
	lease_until INTEGER NOT NULL DEFAULT 0,
	error       TEXT    NOT NULL DEFAULT '',
	at          INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX incident_notices_incident ON incident_notices(incident_id, id);
CREATE INDEX incident_notices_due ON incident_notices(id, next_at, lease_until)
	WHERE status = 'pending';
`
