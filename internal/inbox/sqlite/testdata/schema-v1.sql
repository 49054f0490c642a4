-- The inbox as the first release (intake only) wrote it, with one event.
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
INSERT INTO events (hash, scope, source, provider, tenant, event_id, entity_type, entity_id,
	entity_version, entity_order, entity_state, payload, headers, received_at)
VALUES (x'000102030405060708090a0b0c0d0e0f', 'acme/stripe/charge/updated', 'stripe', 'stripe', 'acme',
	'evt_1', 'charge', 'ch_1', '1700000000', 1700000000, 'paid', '{"id":"evt_1"}',
	'{"Content-Type":"application/json"}', 1700000000000000000);
