package sqlitedb

import (
	"context"
	"database/sql/driver"
	"fmt"
	"time"
)

const (
	// CheckpointInterval is how often the checkpointer copies the WAL into
	// the database file.
	CheckpointInterval = time.Second
	// CheckpointRestartPages is the WAL size, in pages (4 KiB by default),
	// past which the checkpointer restarts the WAL, so that writers
	// overwrite it from its start instead of growing it.
	CheckpointRestartPages = 16384
	// CheckpointWait bounds how long a restart waits for the readers of
	// the moment, holding the write turn: longer, and it gives the turn
	// back and tries again at the next interval.
	CheckpointWait = 20 * time.Millisecond
)

// checkpointer runs the database's checkpoints on a goroutine of its own,
// so that no commit pays for one.
type checkpointer struct {
	d            *DB
	restartPages int
	wait         time.Duration
	quit, done   chan struct{}
}

func startCheckpointer(d *DB, every time.Duration, restartPages int, wait time.Duration) *checkpointer {
	c := &checkpointer{d: d, restartPages: restartPages, wait: wait, quit: make(chan struct{}), done: make(chan struct{})}
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
			// A failed or busy checkpoint leaves the WAL as it was, which
			// is safe: the next tick tries again, and readers see every
			// commit either way.
			c.checkpoint()
		}
	}
}

// checkpoint runs a passive checkpoint, then restarts the WAL if it has
// grown past restartPages. It reports whether the WAL was restarted, and
// how many frames the restart copied into the database file while it held
// the write turn.
//
// Before a restart it holds back the chunks of sweeps ([DB.Sweep]) and
// runs a second passive checkpoint, which copies what was appended during
// the first. A sweep of a large, cold file writes far more of the WAL
// than intake (each deleted key is a page written again), and the restart
// copies and fsyncs what is left holding the turn: left to run, the
// sweep's frames made that a quarter of a second.
func (c *checkpointer) checkpoint() (restarted bool, inTurn int, err error) {
	ctx := context.Background()
	log, _, err := c.passive(ctx)
	if err != nil || log <= c.restartPages {
		return false, 0, err
	}
	c.d.sweeps.Lock()
	defer c.d.sweeps.Unlock()
	_, done, err := c.passive(ctx)
	if err != nil {
		return false, 0, err
	}
	return c.restart(ctx, done)
}

// passive runs a passive checkpoint and returns the frames in the WAL and
// how many of them are in the database file.
func (c *checkpointer) passive(ctx context.Context) (log, done int, err error) {
	var busy int
	err = c.d.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done)
	return log, done, err
}

// restart copies what the passive checkpoints left of the WAL, the frames
// past copied, into the database file and makes the next writer start the
// WAL over, without truncating the file (an ftruncate of a WAL of 100 MB
// takes tens of milliseconds, during which no one writes). A RESTART
// checkpoint blocks writers while it waits for the readers still using the
// WAL: it takes this process's write turn, so that the process's writers
// queue on the turn instead of sleeping in SQLite's busy handler, and
// waits for the readers at most c.wait on a connection of its own, then
// gives the turn back whether or not the WAL was restarted.
func (c *checkpointer) restart(ctx context.Context, copied int) (bool, int, error) {
	unlock, err := c.d.lock(ctx)
	if err != nil {
		return false, 0, err
	}
	defer unlock()
	conn, err := c.d.Conn(ctx)
	if err != nil {
		return false, 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", c.wait.Milliseconds())); err != nil {
		return false, 0, err
	}
	var busy, log, done int
	err = conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &log, &done)
	if _, resetErr := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeoutMillis)); resetErr != nil {
		// The connection must not go back to the pool with the short
		// timeout, which would make its next writer give up early.
		conn.Raw(func(any) error { return driver.ErrBadConn })
		return false, 0, resetErr
	}
	return err == nil && busy == 0, max(0, done-copied), err
}

// truncate copies the whole WAL into the database file and empties it. It
// waits, on the busy timeout, for the writers and readers of the moment.
func (c *checkpointer) truncate(ctx context.Context) error {
	var busy, log, done int
	return c.d.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &log, &done)
}

// stop ends the goroutine and empties the WAL one last time.
func (c *checkpointer) stop() error {
	close(c.quit)
	<-c.done
	return c.truncate(context.Background())
}
