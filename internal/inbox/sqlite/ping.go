package sqlite

import (
	"context"

	"github.com/hookgate/hookgate/internal/inbox"
)

var _ inbox.Backend = (*Store)(nil)

// Ping implements inbox.Backend: the database file answers a query.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return inbox.Fail(ctx, "ping", err)
	}
	return nil
}
