-- The inbox as the release before per-destination delivery wrote it: event 1 processed
-- (delivered to app), 2 in retry (app failed twice), 3 dead (app refused it).
CREATE TABLE dedupe_keys (
		hash       BLOB    NOT NULL PRIMARY KEY CHECK (length(hash) = 16),
		token      INTEGER NOT NULL,
		committed  INTEGER NOT NULL CHECK (committed IN (0, 1)),
		first_seen INTEGER NOT NULL,
		expires    INTEGER NOT NULL
	) WITHOUT ROWID, STRICT;
INSERT INTO dedupe_keys VALUES(X'21bb6ae742171449daa5f73a35a6fc1f',-6784784628663674814,1,1700000000000000000,1700604800000000000);
INSERT INTO dedupe_keys VALUES(X'2b8e159ebbd5421773fb067d72f8483c',-533023668124434960,1,1700000000000000000,1700604800000000000);
INSERT INTO dedupe_keys VALUES(X'695f955c473ba6fa93d5ab00b955648b',-1621295370920101120,1,1700000000000000000,1700604800000000000);
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
INSERT INTO events VALUES(1,X'695f955c473ba6fa93d5ab00b955648b','acme/stripe/charge/updated','stripe','stripe','acme','evt_1','','','',0,'',X'7b226964223a226576745f31227d','null',1700000000000000000,'processed',1,0,'',0,'',1700000000000000000,'','','',0);
INSERT INTO events VALUES(2,X'2b8e159ebbd5421773fb067d72f8483c','acme/stripe/charge/updated','stripe','stripe','acme','evt_2','','','',0,'',X'7b226964223a226576745f32227d','null',1700000000000000000,'retry',1,1700000060000000000,'',0,'busy',0,'','','',0);
INSERT INTO events VALUES(3,X'21bb6ae742171449daa5f73a35a6fc1f','acme/stripe/charge/updated','stripe','stripe','acme','evt_3','','','',0,'',X'7b226964223a226576745f33227d','null',1700000000000000000,'dead',1,0,'',0,'gone',0,'','','',0);
CREATE TABLE settings (
	name  TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;
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
INSERT INTO deliveries VALUES(1,'app','delivered',1,204,'',1700000000000000000);
INSERT INTO deliveries VALUES(2,'app','failed',2,503,'busy',1700000000000000000);
INSERT INTO deliveries VALUES(3,'app','failed',1,410,'gone',1700000000000000000);
CREATE TABLE counters (
	source     TEXT    NOT NULL PRIMARY KEY,
	accepted   INTEGER NOT NULL DEFAULT 0,
	duplicates INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT INTO counters VALUES('stripe',3,0);
CREATE TABLE status_counts (
	source TEXT    NOT NULL,
	status TEXT    NOT NULL,
	n      INTEGER NOT NULL,
	PRIMARY KEY (source, status)
) WITHOUT ROWID;
INSERT INTO status_counts VALUES('stripe','dead',1);
INSERT INTO status_counts VALUES('stripe','processed',1);
INSERT INTO status_counts VALUES('stripe','received',0);
INSERT INTO status_counts VALUES('stripe','retry',1);
CREATE INDEX dedupe_keys_expires ON dedupe_keys (expires);
CREATE INDEX events_source ON events(source, id);
CREATE INDEX events_status ON events(status, id);
CREATE INDEX events_due
	ON events(id, status, next_attempt_at, lease_until, received_at)
	WHERE status IN ('received', 'retry');
CREATE INDEX events_processed
	ON events(processed_at)
	WHERE status = 'processed';
CREATE TRIGGER events_recounted AFTER UPDATE OF status ON events
	WHEN OLD.status IS NOT NEW.status BEGIN
	UPDATE status_counts SET n = n - 1 WHERE source = OLD.source AND status = OLD.status;
	INSERT INTO status_counts (source, status, n) VALUES (NEW.source, NEW.status, 1)
		ON CONFLICT (source, status) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER events_uncounted AFTER DELETE ON events BEGIN
	UPDATE status_counts SET n = n - 1 WHERE source = OLD.source AND status = OLD.status;
END;
