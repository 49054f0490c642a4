package sqlitedb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// walSync makes this process's commits durable by fsyncing the WAL file
// itself, after the commit and outside the write turn (see the package
// documentation, Durability). One fsync covers every commit made before
// it began, so the commits that wait while one runs share the next.
type walSync struct {
	path string // the -wal file
	// fsync syncs the WAL file; (*os.File).Sync outside tests.
	fsync func(*os.File) error

	mu        sync.Mutex
	committed uint64        // commits made, numbered from 1
	synced    uint64        // the last commit known durable
	running   chan struct{} // closed when the fsync under way ends; nil when none is
	err       error         // the fsync failure that ended syncing
	file      *os.File      // the WAL as last opened; only the fsync under way uses it
}

func newWALSync(dbPath string) *walSync {
	return &walSync{path: dbPath + "-wal", fsync: (*os.File).Sync}
}

// ErrSyncFailed wraps a failed fsync of the WAL. The commits it covered are
// in the file but may not survive a power loss, and after a failed fsync
// the kernel may have dropped the pages it could not write; so every later
// durable write fails with it too, until the process opens the database
// again.
var ErrSyncFailed = errors.New("sqlite: fsync of the write-ahead log failed")

// commit numbers a commit that has just returned; wait with that number
// returns once it is durable.
func (w *walSync) commit() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.committed++
	return w.committed
}

// wait returns once commit seq is durable: after an fsync of the WAL that
// began after the commit returned. If none is under way it runs one, for
// every commit made so far; if one is, it waits for it, and runs the next
// if that one began too early to cover seq.
func (w *walSync) wait(ctx context.Context, seq uint64) error {
	for {
		w.mu.Lock()
		if w.err != nil {
			w.mu.Unlock()
			return w.err
		}
		if w.synced >= seq {
			w.mu.Unlock()
			return nil
		}
		if running := w.running; running != nil {
			w.mu.Unlock()
			select {
			case <-running:
				continue
			case <-ctx.Done():
				return fmt.Errorf("sqlite: commit not known durable: %w", ctx.Err())
			}
		}
		target := w.committed
		done := make(chan struct{})
		w.running = done
		w.mu.Unlock()

		err := w.sync()

		w.mu.Lock()
		if err != nil {
			w.err = fmt.Errorf("%w: %w", ErrSyncFailed, err)
		} else {
			w.synced = target
		}
		w.running = nil
		close(done)
		w.mu.Unlock()
	}
}

// sync fsyncs the WAL file, reopening it first when SQLite has replaced
// it: once every connection of the database has closed, SQLite copies the
// WAL into the database file, fsyncs that and deletes the WAL, and the next
// connection creates a new one. With no WAL file at all there is nothing to
// sync: what the deleted one held is in the synced database file.
func (w *walSync) sync() error {
	cur, err := os.Stat(w.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if w.file != nil {
		if fi, err := w.file.Stat(); err != nil || !os.SameFile(fi, cur) {
			w.file.Close()
			w.file = nil
		}
	}
	if w.file == nil {
		f, err := os.OpenFile(w.path, os.O_RDWR, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		w.file = f
	}
	return w.fsync(w.file)
}

// unsynced is how many commits no fsync has covered yet.
func (w *walSync) unsynced() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.committed - w.synced
}

// close closes the WAL file. No wait may run or follow.
func (w *walSync) close() {
	if w.file != nil {
		w.file.Close()
		w.file = nil
	}
}
