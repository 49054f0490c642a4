package sqlitedb

import (
	"context"
	"database/sql"
	"time"
)

const (
	// CheckpointInterval is how often the checkpointer copies the WAL into
	// the database file.
	CheckpointInterval = time.Second
	// CheckpointTruncatePages is the WAL size, in pages (4 KiB by default),
	// past which the checkpointer empties the WAL with a TRUNCATE
	// checkpoint instead of a passive one.
	CheckpointTruncatePages = 16384
)

// checkpointer runs the database's checkpoints on a goroutine of its own,
// so that no commit pays for one.
type checkpointer struct {
	db            *sql.DB
	truncatePages int
	quit, done    chan struct{}
}

func startCheckpointer(db *sql.DB, every time.Duration, truncatePages int) *checkpointer {
	c := &checkpointer{db: db, truncatePages: truncatePages, quit: make(chan struct{}), done: make(chan struct{})}
	go c.run(every)
	return c
}

func (c *checkpointer) run(every time.Duration) {
	defer close(c.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-tick.C:
			// A failed checkpoint leaves the WAL as it was, which is safe:
			// the next tick tries again, and readers see every commit
			// either way.
			c.checkpoint()
		}
	}
}

// checkpoint runs a passive checkpoint, then a truncating one if the WAL
// has grown past truncatePages.
func (c *checkpointer) checkpoint() error {
	ctx := context.Background()
	var busy, log, done int
	err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done)
	if err != nil || log <= c.truncatePages {
		return err
	}
	return c.truncate(ctx)
}

// truncate copies the whole WAL into the database file and empties it. It
// waits, on the busy timeout, for the writers and readers of the moment.
func (c *checkpointer) truncate(ctx context.Context) error {
	var busy, log, done int
	return c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &log, &done)
}

// stop ends the goroutine and empties the WAL one last time.
func (c *checkpointer) stop() error {
	close(c.quit)
	<-c.done
	return c.truncate(context.Background())
}
