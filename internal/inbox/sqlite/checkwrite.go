package sqlite

import (
	"context"
	"database/sql"
	"strconv"
)

// CheckWrite implements inbox.WriteChecker: one row of settings is written
// and committed, durably, as intake's commits are.
func (s *Store) CheckWrite(ctx context.Context) error {
	now := strconv.FormatInt(s.now().UnixNano(), 10)
	return s.write(ctx, "check write", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES ('write_check', ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`, now)
		return err
	})
}
