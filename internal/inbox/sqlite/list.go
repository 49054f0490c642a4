package sqlite

import (
	"context"
	"strings"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// List implements inbox.Store.
func (s *Store) List(ctx context.Context, f inbox.Filter) ([]inbox.Event, error) {
	q, args := listQuery(f)
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

// listQuery returns the statement and arguments of List(f).
func listQuery(f inbox.Filter) (string, []any) {
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
	if f.EventID != "" {
		add("event_id = ?", f.EventID)
	}
	if f.Hash != (dedupe.Hash{}) {
		add("hash = ?", f.Hash[:])
	}
	if !f.Since.IsZero() {
		add("received_at >= ?", f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		add("received_at < ?", f.Until.UnixNano())
	}
	switch f.Outcome {
	case "":
	case inbox.ApplyPending:
		add("apply_outcome = ?", "")
	default:
		add("apply_outcome = ?", string(f.Outcome))
	}
	if f.BeforeID > 0 {
		add("id < ?", f.BeforeID)
	}
	if f.AfterID > 0 {
		add("id > ?", f.AfterID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = inbox.DefaultLimit
	}
	q := `SELECT ` + columns + ` FROM events`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, limit)
	if f.AfterID > 0 {
		return `SELECT * FROM (` + q + ` ORDER BY id LIMIT ?) ORDER BY id DESC`, args
	}
	if !f.Since.IsZero() || !f.Until.IsZero() {
		return q + ` ORDER BY received_at DESC, id DESC LIMIT ?`, args
	}
	return q + ` ORDER BY id DESC LIMIT ?`, args
}
