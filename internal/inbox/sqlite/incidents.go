package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

var _ inbox.Incidents = (*Store)(nil)

const incidentColumns = `id, kind, source, destination, opened_at, resolved_at, seen_at, reminded_at, counts, last_error`

// scanIncident reads incidentColumns.
func scanIncident(row interface{ Scan(...any) error }) (inbox.Incident, error) {
	var (
		inc                inbox.Incident
		opened, seen       int64
		resolved, reminded sql.NullInt64
		counts             []byte
	)
	err := row.Scan(&inc.ID, &inc.Kind, &inc.Source, &inc.Destination, &opened, &resolved, &seen, &reminded,
		&counts, &inc.LastError)
	if err != nil {
		return inc, err
	}
	inc.OpenedAt, inc.SeenAt = fromNanos(opened), fromNanos(seen)
	inc.ResolvedAt, inc.RemindedAt = fromNanos(resolved.Int64), fromNanos(reminded.Int64)
	inc.Counts, err = inbox.DecodeCounts(counts)
	return inc, err
}

// openIncident opens the incident of a key unless one is open: the unique
// partial index incidents_open is the conflict, and then no row returns.
const openIncident = `INSERT INTO incidents
	(kind, source, destination, opened_at, seen_at, counts, last_error) VALUES (?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (kind, source, destination) WHERE resolved_at IS NULL DO NOTHING
	RETURNING ` + incidentColumns

// seeIncident records an observation of the open incident of a key.
const seeIncident = `UPDATE incidents SET seen_at = ?, counts = ?, last_error = ?
	WHERE kind = ? AND source = ? AND destination = ? AND resolved_at IS NULL
	RETURNING ` + incidentColumns

// Observe implements inbox.Incidents. The insert and the update run in one
// write transaction, which SQLite runs one at a time across connections
// and processes, and incidents_open refuses a second open incident of a
// key in any case.
func (s *Store) Observe(ctx context.Context, inc inbox.Incident, notices inbox.NoticeFunc) (inbox.Incident, bool, error) {
	counts, err := inbox.CheckObserve("observe", inc)
	if err != nil {
		return inbox.Incident{}, false, err
	}
	var (
		out    inbox.Incident
		opened bool
	)
	err = s.write(ctx, "observe incident", func(tx *sql.Tx) error {
		seen := nanos(inc.SeenAt)
		var err error
		out, err = scanIncident(tx.QueryRowContext(ctx, openIncident,
			inc.Kind, inc.Source, inc.Destination, seen, seen, counts, inc.LastError))
		if opened = err == nil; opened {
			return queueNotices(ctx, tx, out, notices)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		out, err = scanIncident(tx.QueryRowContext(ctx, seeIncident,
			seen, counts, inc.LastError, inc.Kind, inc.Source, inc.Destination))
		return err
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
	return s.change(ctx, "see incident", `UPDATE incidents SET seen_at = ?, counts = ?, last_error = ?
		WHERE id = ? AND resolved_at IS NULL
		RETURNING `+incidentColumns, []any{nanos(inc.SeenAt), counts, inc.LastError, inc.ID}, nil)
}

// queueNotices queues the notices notices builds of inc, in tx.
func queueNotices(ctx context.Context, tx *sql.Tx, inc inbox.Incident, notices inbox.NoticeFunc) error {
	if notices == nil {
		return nil
	}
	for _, n := range notices(inc) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO incident_notices (incident_id, change, channel, body)
			VALUES (?, ?, ?, coalesce(?, x''))`, inc.ID, n.Change, n.Channel, n.Body); err != nil {
			return err
		}
	}
	return nil
}

// change runs update, which changes one incident and returns it or no
// row, and queues the notices of the changed incident; it reports
// whether update changed one.
func (s *Store) change(ctx context.Context, op, update string, args []any, notices inbox.NoticeFunc) (bool, error) {
	var changed bool
	err := s.write(ctx, op, func(tx *sql.Tx) error {
		inc, err := scanIncident(tx.QueryRowContext(ctx, update, args...))
		if changed = err == nil; !changed {
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			return err
		}
		return queueNotices(ctx, tx, inc, notices)
	})
	return changed, err
}

// Resolve implements inbox.Incidents. json_patch merges the given counts
// over the stored ones key by key.
func (s *Store) Resolve(ctx context.Context, id int64, at time.Time, counts map[string]int64, notices inbox.NoticeFunc) (bool, error) {
	if err := inbox.CheckIncidentTime("resolve", at); err != nil {
		return false, err
	}
	patch, err := inbox.EncodeCounts(counts)
	if err != nil {
		return false, err
	}
	return s.change(ctx, "resolve incident", `UPDATE incidents SET resolved_at = ?, counts = json_patch(counts, ?)
		WHERE id = ? AND resolved_at IS NULL
		RETURNING `+incidentColumns, []any{nanos(at), patch, id}, notices)
}

// Remind implements inbox.Incidents.
func (s *Store) Remind(ctx context.Context, id int64, due, at time.Time, notices inbox.NoticeFunc) (bool, error) {
	if err := inbox.CheckIncidentTime("remind", at); err != nil {
		return false, err
	}
	return s.change(ctx, "remind incident", `UPDATE incidents SET reminded_at = ?
		WHERE id = ? AND resolved_at IS NULL AND coalesce(reminded_at, opened_at) < ?
		RETURNING `+incidentColumns, []any{nanos(at), id, nanos(due)}, notices)
}

// listIncidents reads the open incidents through incidents_open (the
// planner, without statistics, would walk every incident instead), then,
// when its second argument is true, the ended ones by id, newest first.
const listIncidents = `SELECT ` + incidentColumns + ` FROM (
	SELECT * FROM (SELECT ` + incidentColumns + ` FROM incidents INDEXED BY incidents_open
		WHERE resolved_at IS NULL ORDER BY id DESC LIMIT ?1)
	UNION ALL
	SELECT * FROM (SELECT ` + incidentColumns + ` FROM incidents
		WHERE ?2 AND resolved_at IS NOT NULL ORDER BY id DESC LIMIT ?1)
) ORDER BY resolved_at IS NOT NULL, id DESC LIMIT ?1`

// ListIncidents implements inbox.Incidents.
func (s *Store) ListIncidents(ctx context.Context, all bool, limit int) ([]inbox.Incident, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, listIncidents, limit, all)
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

const noticeColumns = `id, incident_id, change, channel, body, attempts, status, error, at`

// scanNotice reads noticeColumns.
func scanNotice(row interface{ Scan(...any) error }) (inbox.Notice, error) {
	var (
		n  inbox.Notice
		at int64
	)
	err := row.Scan(&n.ID, &n.IncidentID, &n.Change, &n.Channel, &n.Body, &n.Attempts, &n.Status, &n.Error, &at)
	n.At = fromNanos(at)
	return n, err
}

// collectNotices reads every row of rows with scanNotice and closes rows.
func collectNotices(rows *sql.Rows) ([]inbox.Notice, error) {
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
	rows, err := s.db.QueryContext(ctx, `SELECT `+noticeColumns+` FROM incident_notices
		WHERE incident_id = ? ORDER BY id`, id)
	if err != nil {
		return nil, inbox.Fail(ctx, "notices", err)
	}
	out, err := collectNotices(rows)
	if err != nil {
		return nil, inbox.Fail(ctx, "notices", err)
	}
	return out, nil
}

// leaseNotices takes the due notices in one statement. Its inner SELECT
// walks the partial index incident_notices_due in id order, and repeats
// its WHERE clause, which SQLite needs to use it.
const leaseNotices = `UPDATE incident_notices SET lease_owner = ?, lease_until = ?
	WHERE id IN (SELECT id FROM incident_notices INDEXED BY incident_notices_due
		WHERE status = 'pending' AND next_at <= ? AND lease_until <= ?
		ORDER BY id LIMIT ?)
	RETURNING ` + noticeColumns

// LeaseNotices implements inbox.Incidents. Like Lease, it commits without
// waiting for the fsync (see process): a lease lost in a crash makes its
// notices due again, as its expiry would.
func (s *Store) LeaseNotices(ctx context.Context, owner string, n int, now time.Time, d time.Duration) ([]inbox.Notice, error) {
	if err := inbox.CheckNoticeOwner("lease notices", owner); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	var out []inbox.Notice
	err := s.process(ctx, "lease notices", func(tx *sql.Tx) error {
		at := nanos(now)
		rows, err := tx.QueryContext(ctx, leaseNotices, owner, sqlitedb.After(at, d), at, at, n)
		if err != nil {
			return err
		}
		out, err = collectNotices(rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b inbox.Notice) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// FinishNotice implements inbox.Incidents. A sent notice keeps the error
// of the send that failed before it.
func (s *Store) FinishNotice(ctx context.Context, owner string, id int64, sent bool, errText string, retry time.Time) error {
	if err := inbox.CheckNoticeOwner("finish notice", owner); err != nil {
		return err
	}
	status := inbox.NoticeStatus(sent, retry)
	var held bool
	err := s.write(ctx, "finish notice", func(tx *sql.Tx) error {
		var at int64
		if status != inbox.NoticePending {
			at = s.now().UnixNano()
		}
		res, err := tx.ExecContext(ctx, `UPDATE incident_notices SET status = ?, attempts = attempts + 1,
			next_at = ?, error = CASE WHEN ? THEN error ELSE ? END, at = ?, lease_owner = '', lease_until = 0
			WHERE id = ? AND lease_owner = ?`,
			status, nanos(retry), sent, errText, at, id, owner)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		held = n > 0
		return err
	})
	if err != nil {
		return err
	}
	if !held {
		return fmt.Errorf("inbox: finish notice %d: %w", id, inbox.ErrNotOwner)
	}
	return nil
}
