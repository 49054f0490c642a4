package sqlite

import (
	"context"
	"strings"

	"github.com/hookgate/hookgate/internal/inbox"
)

// List implements inbox.Store.
func (s *Store) List(ctx context.Context, f inbox.Filter) ([]inbox.Event, error) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if f.Source != "" {
		add("source = ?", f.Source)
	}
	if f.Tenant != "" {
		add("tenant = ?", f.Tenant)
	}
	if f.Status != "" {
		add("status = ?", string(f.Status))
	}
	if f.BeforeID > 0 {
		add("id < ?", f.BeforeID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = inbox.DefaultLimit
	}
	q := `SELECT ` + columns + ` FROM events`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, unavailable("list", err)
	}
	defer rows.Close()
	var events []inbox.Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, unavailable("list", err)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable("list", err)
	}
	return events, nil
}
