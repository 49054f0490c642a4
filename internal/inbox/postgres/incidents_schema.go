package postgres

// schemaV6 keeps the alerting's incidents and the notices queued for
// them. resolved_at and reminded_at are NULL until the incident ends and
// until its first reminder, so that inbox_incidents_open holds only the
// open incidents and its uniqueness lets one incident of a key be open at
// a time, whichever node observes it. inbox_incident_notices_due holds the
// pending notices in the order LeaseNotices takes them. Counts are jsonb,
// so that Resolve merges them in its UPDATE.
const schemaV6 = `
CREATE TABLE inbox_incidents (
	id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	kind        text        NOT NULL,
	source      text        NOT NULL,
	destination text        NOT NULL,
	opened_at   timestamptz NOT NULL,
	resolved_at timestamptz,
	seen_at     timestamptz NOT NULL,
	reminded_at timestamptz,
	counts      jsonb       NOT NULL,
	last_error  text        NOT NULL
);
CREATE UNIQUE INDEX inbox_incidents_open ON inbox_incidents (kind, source, destination)
	WHERE resolved_at IS NULL;

CREATE TABLE inbox_incident_notices (
	id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	incident_id bigint      NOT NULL REFERENCES inbox_incidents (id),
	change      text        NOT NULL,
	channel     text        NOT NULL,
	body        bytea       NOT NULL,
	status      text        NOT NULL DEFAULT 'pending',
	attempts    integer     NOT NULL DEFAULT 0,
	next_at     timestamptz NOT NULL DEFAULT '-infinity',
	lease_owner text        NOT NULL DEFAULT '',
	lease_until timestamptz NOT NULL DEFAULT '-infinity',
	error       text        NOT NULL DEFAULT '',
	at          timestamptz NOT NULL DEFAULT '-infinity'
);
CREATE INDEX inbox_incident_notices_incident ON inbox_incident_notices (incident_id, id);
CREATE INDEX inbox_incident_notices_due ON inbox_incident_notices (id) WHERE status = 'pending';
`
