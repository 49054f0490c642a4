package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Step is one forward-only change of a table set's schema. A step runs once
// per database file, inside the transaction that records it.
type Step struct {
	// Name says what the step changes; errors carry it.
	Name string
	// Up makes the change in tx.
	Up func(ctx context.Context, tx *sql.Tx) error
}

// Exec is a step that runs stmts, statements separated by semicolons.
func Exec(name, stmts string) Step {
	return Step{Name: name, Up: func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, stmts)
		return err
	}}
}

// ErrNewerSchema is returned by [DB.Migrate] for a file whose schema a newer
// hookgate has migrated past the steps this one knows: it would not
// understand the tables, and migrations do not go back.
var ErrNewerSchema = errors.New("sqlite: database schema is newer than this hookgate")

// versionsTable records, per table set, how many of its steps a file has
// had.
const versionsTable = `CREATE TABLE IF NOT EXISTS schema_versions (
	name    TEXT    NOT NULL PRIMARY KEY,
	version INTEGER NOT NULL
) WITHOUT ROWID, STRICT`

// Migrate brings the table set name up to len(steps): it runs, in order,
// the steps the file has not had, and records the new version, all in one
// write transaction. A process that opens the file while another migrates
// it waits for the write lock and then finds the steps done.
func (d *DB) Migrate(ctx context.Context, name string, steps []Step) error {
	return d.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, versionsTable); err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		var have int
		err := tx.QueryRowContext(ctx, `SELECT version FROM schema_versions WHERE name = ?`, name).Scan(&have)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		if have > len(steps) {
			return fmt.Errorf("migrate %s: %w: version %d, this hookgate knows %d", name, ErrNewerSchema, have, len(steps))
		}
		if have == len(steps) {
			return nil
		}
		for i := have; i < len(steps); i++ {
			if err := steps[i].Up(ctx, tx); err != nil {
				return fmt.Errorf("migrate %s to version %d (%s): %w", name, i+1, steps[i].Name, err)
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO schema_versions (name, version) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET version = excluded.version`, name, len(steps))
		if err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
		return nil
	})
}
