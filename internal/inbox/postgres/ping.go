package postgres

import (
	"context"

	"github.com/hookgate/hookgate/internal/inbox"
)

var _ inbox.Backend = (*Store)(nil)

// Ping implements inbox.Backend: a connection of the pool answers a query.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return inbox.Fail(ctx, "ping", err)
	}
	return nil
}

// CheckWrite implements inbox.WriteChecker: one row of inbox_settings is
// written and committed.
func (s *Store) CheckWrite(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO inbox_settings (name, value) VALUES ('write_check', now()::text)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`); err != nil {
		return inbox.Fail(ctx, "check write", err)
	}
	return nil
}
