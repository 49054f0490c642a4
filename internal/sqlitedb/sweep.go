package sqlitedb

import (
	"context"
	"database/sql"

	"github.com/hookgate/hookgate/internal/sweep"
)

// Sweep runs a long delete as a series of durable write transactions
// paced by [sweep.Run]: fn deletes at most limit rows in tx and returns how
// many it deleted. It returns how many rows the committed transactions
// deleted, with the first error.
//
// A sweep's deletes can write tens of thousands of scattered pages a
// second to the WAL, far more than intake does, and the checkpointer
// restarts the WAL holding the write turn. So the chunks also wait while
// the checkpointer catches up before a restart (see the package
// documentation, Checkpoints): the restart then copies only what other
// writers appended meanwhile.
func (d *DB) Sweep(ctx context.Context, most int, fn func(tx *sql.Tx, limit int) (int, error)) (int, error) {
	return sweep.Run(ctx, most, func(limit int) (int, error) {
		var n int
		d.sweeps.RLock()
		defer d.sweeps.RUnlock()
		err := d.Write(ctx, func(tx *sql.Tx) error {
			var err error
			n, err = fn(tx, limit)
			return err
		})
		return n, err
	})
}
