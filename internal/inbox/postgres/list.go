package postgres

import (
	"context"
	"strconv"
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
	if f.BeforeID > 0 {
		add("id <", f.BeforeID)
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
	q += ` ORDER BY id DESC LIMIT $` + strconv.Itoa(len(args))
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fail(ctx, "list", err)
	}
	events, err := collectEvents(rows)
	if err != nil {
		return nil, fail(ctx, "list", err)
	}
	return events, nil
}
