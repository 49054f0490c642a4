package sqlite

import (
	"context"
	"database/sql"

	"github.com/hookgate/hookgate/internal/inbox"
)

var _ inbox.DuplicateCounter = (*Store)(nil)

// CountDuplicates implements inbox.DuplicateCounter: duplicates answered
// before they reached the store (from intake's memory of recent keys, or
// from the Redis front) are added to the sources' counts.
func (s *Store) CountDuplicates(ctx context.Context, bySource map[string]int64) error {
	c := intakeCounts{}
	for source, n := range bySource {
		c.addN(source, 1, n)
	}
	return s.write(ctx, "count duplicates", func(tx *sql.Tx) error { return c.save(ctx, s.db, tx, s.now().UnixNano()) })
}
