package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookgate/hookgate/internal/inbox"
)

var _ inbox.Incidents = (*Store)(nil)

const incidentColumns = `id, kind, source, destination, opened_at, resolved_at, seen_at, reminded_at, counts, last_error`

// scanIncident reads incidentColumns.
func scanIncident(row pgx.Row) (inbox.Incident, error) {
	var (
		inc                              inbox.Incident
		opened, resolved, seen, reminded pgtype.Timestamptz
		counts                           []byte
	)
	err := row.Scan(&inc.ID, &inc.Kind, &inc.Source, &inc.Destination, &opened, &resolved, &seen, &reminded,
		&counts, &inc.LastError)
	if err != nil {
		return inc, err
	}
	inc.OpenedAt, inc.ResolvedAt, inc.SeenAt, inc.RemindedAt = fromTS(opened), fromTS(resolved), fromTS(seen), fromTS(reminded)
	inc.Counts, err = inbox.DecodeCounts(counts)
	return inc, err
}

// openIncident opens the incident of a key unless one is open: the unique
// partial index inbox_incidents_open is the conflict, and then no row
// returns. An insert that meets another transaction's uncommitted open
// incident of the key waits for it to end, so of nodes observing a key at
// once exactly one opens it.
const openIncident = `INSERT INTO inbox_incidents
	(kind, source, destination, opened_at, seen_at, counts, last_error)
	VALUES ($1, $2, $3, $4::timestamptz, $4::timestamptz, $5::jsonb, $6)
	ON CONFLICT (kind, source, destination) WHERE resolved_at IS NULL DO NOTHING
	RETURNING ` + incidentColumns

// seeIncident records an observation of the open incident of a key.
const seeIncident = `UPDATE inbox_incidents SET seen_at = $4::timestamptz, counts = $5::jsonb, last_error = $6
	WHERE kind = $1 AND source = $2 AND destination = $3 AND resolved_at IS NULL
	RETURNING ` + incidentColumns

// Observe implements inbox.Incidents. The statement after a conflict sees
// the open incident that caused it, committed by then; if that incident
// was resolved meanwhile, the key has none open and the insert is tried
// again.
func (s *Store) Observe(ctx context.Context, inc inbox.Incident, notices inbox.NoticeFunc) (inbox.Incident, bool, error) {
	counts, err := inbox.CheckObserve("observe", inc)
	if err != nil {
		return inbox.Incident{}, false, err
	}
	args := []any{text(inc.Kind), text(inc.Source), text(inc.Destination), inc.SeenAt, counts, text(inc.LastError)}
	var (
		out    inbox.Incident
		opened bool
	)
	err = s.tx(ctx, "observe incident", func(tx pgx.Tx) error {
		for {
			var err error
			out, err = scanIncident(tx.QueryRow(ctx, openIncident, args...))
			if opened = err == nil; opened {
				return queueNotices(ctx, tx, out, notices)
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			out, err = scanIncident(tx.QueryRow(ctx, seeIncident, args...))
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
	})
	if err != nil {
		return inbox.Incident{}, false, err
	}
	return out, opened, nil
}

// See implements inbox.Incidents.
func (s *Store) See(ctx context.Context, inc inbox.Incident) (bool, error) {
	counts, err := inbox.CheckObserve("see", inc)
	if err != nil {
		return false, err
	}
	return s.change(ctx, "see incident", `UPDATE inbox_incidents SET seen_at = $2::timestamptz, counts = $3::jsonb, last_error = $4
		WHERE id = $1 AND resolved_at IS NULL
		RETURNING `+incidentColumns, []any{inc.ID, inc.SeenAt, counts, text(inc.LastError)}, nil)
}

// queueNotices queues the notices notices builds of inc, in tx.
func queueNotices(ctx context.Context, tx pgx.Tx, inc inbox.Incident, notices inbox.NoticeFunc) error {
	if notices == nil {
		return nil
	}
	for _, n := range notices(inc) {
		if _, err := tx.Exec(ctx, `INSERT INTO inbox_incident_notices (incident_id, change, channel, body)
			VALUES ($1, $2, $3, coalesce($4::bytea, ''::bytea))`, inc.ID, text(n.Change), text(n.Channel), n.Body); err != nil {
			return err
		}
	}
	return nil
}

// change runs update, which changes one incident and returns it or no
// row, and queues the notices of the changed incident; it reports
// whether update changed one. Of transactions changing one incident at
// once, the later ones wait for the row and test their WHERE clause
// again on what the first committed.
func (s *Store) change(ctx context.Context, op, update string, args []any, notices inbox.NoticeFunc) (bool, error) {
	var changed bool
	err := s.tx(ctx, op, func(tx pgx.Tx) error {
		inc, err := scanIncident(tx.QueryRow(ctx, update, args...))
		if changed = err == nil; !changed {
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}
		return queueNotices(ctx, tx, inc, notices)
	})
	return changed, err
}

// Resolve implements inbox.Incidents. jsonb's || merges the given counts
// over the stored ones key by key.
func (s *Store) Resolve(ctx context.Context, id int64, at time.Time, counts map[string]int64, notices inbox.NoticeFunc) (bool, error) {
	if err := inbox.CheckIncidentTime("resolve", at); err != nil {
		return false, err
	}
	patch, err := inbox.EncodeCounts(counts)
	if err != nil {
		return false, err
	}
	return s.change(ctx, "resolve incident", `UPDATE inbox_incidents
		SET resolved_at = $2::timestamptz, counts = counts || $3::jsonb
		WHERE id = $1 AND resolved_at IS NULL
		RETURNING `+incidentColumns, []any{id, at, patch}, notices)
}

// Remind implements inbox.Incidents.
func (s *Store) Remind(ctx context.Context, id int64, due, at time.Time, notices inbox.NoticeFunc) (bool, error) {
	if err := inbox.CheckIncidentTime("remind", at); err != nil {
		return false, err
	}
	return s.change(ctx, "remind incident", `UPDATE inbox_incidents SET reminded_at = $2::timestamptz
		WHERE id = $1 AND resolved_at IS NULL AND coalesce(reminded_at, opened_at) < $3::timestamptz
		RETURNING `+incidentColumns, []any{id, at, due}, notices)
}

// listIncidents reads the open incidents through inbox_incidents_open,
// then, when $2 is true, the ended ones by id, newest first.
const listIncidents = `SELECT ` + incidentColumns + ` FROM (
	(SELECT ` + incidentColumns + ` FROM inbox_incidents
		WHERE resolved_at IS NULL ORDER BY id DESC LIMIT $1)
	UNION ALL
	(SELECT ` + incidentColumns + ` FROM inbox_incidents
		WHERE $2::boolean AND resolved_at IS NOT NULL ORDER BY id DESC LIMIT $1)
) AS i ORDER BY resolved_at IS NOT NULL, id DESC LIMIT $1`

// ListIncidents implements inbox.Incidents.
func (s *Store) ListIncidents(ctx context.Context, all bool, limit int) ([]inbox.Incident, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, listIncidents, limit, all)
	if err != nil {
		return nil, inbox.Fail(ctx, "list incidents", err)
	}
	defer rows.Close()
	var out []inbox.Incident
	for rows.Next() {
		inc, err := scanIncident(rows)
		if err != nil {
			return nil, inbox.Fail(ctx, "list incidents", err)
		}
		out = append(out, inc)
	}
	if err := rows.Err(); err != nil {
		return nil, inbox.Fail(ctx, "list incidents", err)
	}
	return out, nil
}

// noticeColumnNames are the inbox_incident_notices columns scanNotice
// reads, in its order.
var noticeColumnNames = []string{"id", "incident_id", "change", "channel", "body", "attempts", "status", "error", "at"}

var (
	// noticeColumns is the select list of scanNotice.
	noticeColumns = strings.Join(noticeColumnNames, ", ")
	// leasedColumns is noticeColumns qualified by the alias n.
	leasedColumns = "n." + strings.Join(noticeColumnNames, ", n.")
)

// scanNotice reads noticeColumns.
func scanNotice(row pgx.Row) (inbox.Notice, error) {
	var (
		n  inbox.Notice
		at pgtype.Timestamptz
	)
	err := row.Scan(&n.ID, &n.IncidentID, &n.Change, &n.Channel, &n.Body, &n.Attempts, &n.Status, &n.Error, &at)
	n.At = fromTS(at)
	return n, err
}

// collectNotices reads every row of rows with scanNotice and closes rows.
func collectNotices(rows pgx.Rows) ([]inbox.Notice, error) {
	defer rows.Close()
	var out []inbox.Notice
	for rows.Next() {
		n, err := scanNotice(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// Notices implements inbox.Incidents.
func (s *Store) Notices(ctx context.Context, id int64) ([]inbox.Notice, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+noticeColumns+` FROM inbox_incident_notices
		WHERE incident_id = $1 ORDER BY id`, id)
	if err != nil {
		return nil, inbox.Fail(ctx, "notices", err)
	}
	out, err := collectNotices(rows)
	if err != nil {
		return nil, inbox.Fail(ctx, "notices", err)
	}
	return out, nil
}

// leaseNotices takes the due notices in one statement. The inner SELECT
// walks the partial index inbox_incident_notices_due in id order; FOR
// UPDATE SKIP LOCKED passes over the rows another leaser is taking, so
// leasers on any node each get different notices, as Lease does with
// events.
var leaseNotices = `WITH due AS (
	SELECT id FROM inbox_incident_notices
	WHERE status = 'pending' AND next_at <= $1::timestamptz AND lease_until <= $1::timestamptz
	ORDER BY id LIMIT $4
	FOR UPDATE SKIP LOCKED
)
UPDATE inbox_incident_notices n SET lease_owner = $2,
	lease_until = $1::timestamptz + $3::bigint * interval '1 microsecond'
FROM due WHERE n.id = due.id
RETURNING ` + leasedColumns

// LeaseNotices implements inbox.Incidents.
func (s *Store) LeaseNotices(ctx context.Context, owner string, n int, now time.Time, d time.Duration) ([]inbox.Notice, error) {
	if err := inbox.CheckNoticeOwner("lease notices", owner); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, leaseNotices, now, text(owner), micros(d), n)
	if err != nil {
		return nil, inbox.Fail(ctx, "lease notices", err)
	}
	out, err := collectNotices(rows)
	if err != nil {
		return nil, inbox.Fail(ctx, "lease notices", err)
	}
	slices.SortFunc(out, func(a, b inbox.Notice) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// finishNotice ends owner's send of a notice. A sent notice keeps the
// error of the send that failed before it; at is the store's clock for a
// notice sent or given up.
const finishNotice = `UPDATE inbox_incident_notices SET status = $3, attempts = attempts + 1,
	next_at = $4::timestamptz, error = CASE WHEN $3 = 'sent' THEN error ELSE $5 END,
	at = CASE WHEN $3 = 'pending' THEN '-infinity' ELSE coalesce($6::timestamptz, now()) END,
	lease_owner = '', lease_until = '-infinity'
	WHERE id = $1 AND lease_owner = $2`

// FinishNotice implements inbox.Incidents.
func (s *Store) FinishNotice(ctx context.Context, owner string, id int64, sent bool, errText string, retry time.Time) error {
	if err := inbox.CheckNoticeOwner("finish notice", owner); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, finishNotice, id, text(owner), inbox.NoticeStatus(sent, retry), ts(retry), text(errText), s.clock())
	if err != nil {
		return inbox.Fail(ctx, "finish notice", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("inbox: finish notice %d: %w", id, inbox.ErrNotOwner)
	}
	return nil
}
