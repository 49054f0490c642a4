package sqlite

import (
	"context"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// List implements inbox.Store.
func (s *Store) List(ctx context.Context, f inbox.Filter) ([]inbox.Event, error) {
	q, args := listQuery(f)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, inbox.Unavailable("list", err)
	}
	defer rows.Close()
	var events []inbox.Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, inbox.Unavailable("list", err)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, inbox.Unavailable("list", err)
	}
	return events, nil
}

// listQuery returns the statement and arguments of List(f).
func listQuery(f inbox.Filter) (string, []any) {
	var (
		where []string
		args  []any
	)
	for _, c := range f.Conditions(func(t time.Time) any { return t.UnixNano() }) {
		where = append(where, c.Test+" ?")
		args = append(args, c.Arg)
	}
	q := `SELECT ` + columns + ` FROM events`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, f.PageSize())
	if f.AfterID > 0 {
		return `SELECT * FROM (` + q + ` ORDER BY id LIMIT ?) ORDER BY id DESC`, args
	}
	if !f.Since.IsZero() || !f.Until.IsZero() {
		return q + ` ORDER BY received_at DESC, id DESC LIMIT ?`, args
	}
	return q + ` ORDER BY id DESC LIMIT ?`, args
}
