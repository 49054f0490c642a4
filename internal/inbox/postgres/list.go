package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/internal/inbox"
)

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
		return nil, inbox.Fail(ctx, "list", err)
	}
	events, err := collectEvents(rows)
	if err != nil {
		return nil, inbox.Fail(ctx, "list", err)
	}
	return events, nil
}

// listQuery returns the statement and arguments of List(f).
func listQuery(f inbox.Filter) (string, []any) {
	var (
		where []string
		args  []any
	)
	for _, c := range f.Conditions(func(t time.Time) any { return t }) {
		args = append(args, c.Arg)
		where = append(where, c.Test+" $"+strconv.Itoa(len(args)))
	}
	q := `SELECT ` + columns + ` FROM inbox_events`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, f.PageSize())
	limitArg := " LIMIT $" + strconv.Itoa(len(args))
	if f.AfterID > 0 {
		return `SELECT * FROM (` + q + ` ORDER BY id` + limitArg + `) AS page ORDER BY id DESC`, args
	}
	if !f.Since.IsZero() || !f.Until.IsZero() {
		return q + ` ORDER BY received_at DESC, id DESC` + limitArg, args
	}
	return q + ` ORDER BY id DESC` + limitArg, args
}
