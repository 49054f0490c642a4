package postgres

import (
	"context"

	"github.com/hookgate/hookgate/internal/inbox"
)

var _ inbox.Backend = (*Store)(nil)

// Ping implements inbox.Backend: a connection of the pool answers a query.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fail(ctx, "ping", err)
	}
	return nil
}
