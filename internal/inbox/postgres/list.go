package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// listIndexes are the indexes List needs besides inbox_events_source and
// inbox_events_status, so that every filter reads an index rather than
// inbox_events, which holds every event of the retention period: by
// tenant, provider event id and key, by time received (in the order a
// time range is listed), and by apply outcome.
const listIndexes = `
CREATE INDEX IF NOT EXISTS inbox_events_tenant ON inbox_events (tenant, id);
CREATE INDEX IF NOT EXISTS inbox_events_event_id ON inbox_events (event_id, id);
CREATE INDEX IF NOT EXISTS inbox_events_hash ON inbox_events (hash, id);
CREATE INDEX IF NOT EXISTS inbox_events_received ON inbox_events (received_at, id);
CREATE INDEX IF NOT EXISTS inbox_events_outcome ON inbox_events (apply_outcome, id);
`

// List implements inbox.Store. Its statement is planned for each call's
// values (pgx's exec mode: an unnamed statement) rather than prepared and
// cached: after a few runs PostgreSQL may switch a prepared statement to
// a generic plan, which does not see the values and walks the primary key
// newest first for a source, tenant, status or outcome that few events
// have (the whole table, for one that none has). Planning a List costs
// little beside that.
func (s *Store) List(ctx context.Context, f inbox.Filter) ([]inbox.Event, error) {
	q, args := listQuery(f)
	rows, err := s.pool.Query(ctx, q, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return nil, fail(ctx, "list", err)
	}
	events, err := collectEvents(rows)
	if err != nil {
		return nil, fail(ctx, "list", err)
	}
	return events, nil
}

// listQuery returns the statement and arguments of List(f).
func listQuery(f inbox.Filter) (string, []any) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, cond+" $"+strconv.Itoa(len(args)))
	}
	if f.Source != "" {
		add("source =", f.Source)
	}
	if f.Tenant != "" {
		add("tenant =", f.Tenant)
	}
	if f.Status != "" {
		add("status =", string(f.Status))
	}
	if f.EventID != "" {
		add("event_id =", f.EventID)
	}
	if f.Hash != (dedupe.Hash{}) {
		add("hash =", f.Hash[:])
	}
	if !f.Since.IsZero() {
		add("received_at >=", f.Since)
	}
	if !f.Until.IsZero() {
		add("received_at <", f.Until)
	}
	switch f.Outcome {
	case "":
	case inbox.ApplyPending:
		add("apply_outcome =", "")
	default:
		add("apply_outcome =", string(f.Outcome))
	}
	if f.BeforeID > 0 {
		add("id <", f.BeforeID)
	}
	if f.AfterID > 0 {
		add("id >", f.AfterID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = inbox.DefaultLimit
	}
	q := `SELECT ` + columns + ` FROM inbox_events`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, limit)
	limitArg := " LIMIT $" + strconv.Itoa(len(args))
	if f.AfterID > 0 {
		return `SELECT * FROM (` + q + ` ORDER BY id` + limitArg + `) AS page ORDER BY id DESC`, args
	}
	if !f.Since.IsZero() || !f.Until.IsZero() {
		return q + ` ORDER BY received_at DESC, id DESC` + limitArg, args
	}
	return q + ` ORDER BY id DESC` + limitArg, args
}
