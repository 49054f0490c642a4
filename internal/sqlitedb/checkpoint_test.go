package sqlitedb

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"
)

// fillWAL commits n transactions of about four pages each.
func fillWAL(t *testing.T, db *DB, n int) {
	t.Helper()
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS pad (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	row := []byte(strings.Repeat("x", 16000))
	for range n {
		if _, err := db.Exec(`INSERT INTO pad (b) VALUES (?)`, row); err != nil {
			t.Fatal(err)
		}
	}
}

// walPages is the size of the WAL file in (4 KiB) pages.
func walPages(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Size() / 4096)
}

// waitFor polls cond until it holds or ten seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCommitsDoNotCheckpoint: no commit copies the WAL into the database
// file, however long the WAL grows (SQLite's default would checkpoint in
// the commit that passes 1000 pages), so the writer holding the turn never
// pays for a checkpoint.
func TestCommitsDoNotCheckpoint(t *testing.T) {
	t.Parallel()
	db, path := open(t)
	db.ckpt.stop()
	db.ckpt = nil
	fillWAL(t, db, 300)
	if n := walPages(t, path); n < 1200 {
		t.Fatalf("WAL of %d pages after 300 commits of four pages each: a commit checkpointed", n)
	}
}

// walFrames commits one small row and returns the frames in the WAL
// since it last started over.
func walFrames(t *testing.T, db *DB) int {
	t.Helper()
	if _, err := db.Exec(`INSERT INTO pad (b) VALUES (x'00')`); err != nil {
		t.Fatal(err)
	}
	var busy, log, done int
	if err := db.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
		t.Fatal(err)
	}
	return log
}

// TestCheckpointer: the background checkpointer copies the WAL into the
// database file and, once the WAL passes its bound, starts it over: the
// next commit writes from the WAL's start.
func TestCheckpointer(t *testing.T) {
	t.Parallel()
	db, _ := open(t)
	// The WAL passes the bound before the checkpointer starts: one that
	// ran during the fill could restart it midway and leave the rest below
	// the bound, which it then only copies.
	db.ckpt.stop()
	db.ckpt = nil
	fillWAL(t, db, 100)
	if n := walFrames(t, db); n < 400 {
		t.Fatalf("%d frames in the WAL after 100 commits of four pages", n)
	}
	db.ckpt = startCheckpointer(db, 10*time.Millisecond, 100, CheckpointWait)
	waitFor(t, "the WAL to start over", func() bool { return walFrames(t, db) < 100 })
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pad WHERE length(b) > 1`).Scan(&n); err != nil || n != 100 {
		t.Fatalf("%d rows after the checkpoint (%v), want 100", n, err)
	}
}

// TestRestartWaitsForReadersBriefly: a restart holds the write turn while
// it waits for the readers still using the WAL; a reader that stays (a
// long listing, another process) must not hold the process's writers for
// the busy timeout. The restart gives the turn back without restarting,
// and restarts at a later try, once the reader is gone.
func TestRestartWaitsForReadersBriefly(t *testing.T) {
	t.Parallel()
	db, _ := open(t)
	db.ckpt.stop()
	db.ckpt = nil
	fillWAL(t, db, 1)
	reader, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if _, err := reader.ExecContext(t.Context(), `BEGIN`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRowContext(t.Context(), `SELECT count(*) FROM pad`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	fillWAL(t, db, 50)

	c := &checkpointer{d: db, restartPages: 10, wait: CheckpointWait}
	type outcome struct {
		restarted bool
		err       error
	}
	done := make(chan outcome, 1)
	go func() {
		restarted, _, err := c.checkpoint()
		done <- outcome{restarted, err}
	}()
	waitFor(t, "the restart to take the write turn", func() bool { return len(db.turn) == 1 || len(done) == 1 })
	// Far less than the busy timeout a restart waiting on SQLite's
	// default would hold the turn for, far more than CheckpointWait.
	ctx, cancel := context.WithTimeout(t.Context(), busyTimeoutMillis*time.Millisecond/2)
	defer cancel()
	if err := db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO pad (b) VALUES (x'01')`)
		return err
	}); err != nil {
		t.Fatalf("a write while a restart waited for a reader: %v", err)
	}
	if o := <-done; o.err != nil || o.restarted {
		t.Fatalf("restart with a reader on the WAL: restarted %v, %v; want not restarted, no error", o.restarted, o.err)
	}

	if _, err := reader.ExecContext(t.Context(), `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if restarted, _, err := c.checkpoint(); err != nil || !restarted {
		t.Fatalf("restart once the reader is gone: restarted %v, %v", restarted, err)
	}
	if n := walFrames(t, db); n >= 10 {
		t.Fatalf("%d frames in the WAL after the restart and one commit", n)
	}
}

// TestRestartHoldsSweepsBack: sweeps keep appending to the WAL, and a
// restart copies what is left holding the write turn. The checkpointer
// holds the sweeps' chunks back while it catches up before restarting, so
// with sweeps as the only writers every restart copies nothing in the
// turn, and the sweeps still finish.
func TestRestartHoldsSweepsBack(t *testing.T) {
	t.Parallel()
	db, _ := open(t)
	db.ckpt.stop()
	db.ckpt = nil
	if _, err := db.Exec(`CREATE TABLE junk (id INTEGER PRIMARY KEY, g INTEGER, b BLOB);
		CREATE INDEX junk_g ON junk (g, id)`); err != nil {
		t.Fatal(err)
	}
	// Eight sweeps at once, so that one of them commits every
	// millisecond or so despite each one's pauses; each deletes rows
	// scattered over the table, five a chunk, as a sweep of keys does.
	const rows, sweeps = 4000, 8
	if _, err := db.Exec(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?)
		INSERT INTO junk (id, g, b) SELECT x, x % ?, randomblob(300) FROM c`, rows, sweeps); err != nil {
		t.Fatal(err)
	}
	type result struct {
		deleted int
		err     error
	}
	swept := make(chan result, sweeps)
	for g := range sweeps {
		go func() {
			n, err := db.Sweep(t.Context(), 5, func(tx *sql.Tx, limit int) (int, error) {
				res, err := tx.Exec(`DELETE FROM junk WHERE id IN (SELECT id FROM junk WHERE g = ? ORDER BY id LIMIT ?)`, g, limit)
				if err != nil {
					return 0, err
				}
				n, err := res.RowsAffected()
				return int(n), err
			})
			swept <- result{n, err}
		}()
	}
	c := &checkpointer{d: db, restartPages: 50, wait: CheckpointWait}
	restarts := 0
	for len(swept) < sweeps {
		restarted, inTurn, err := c.checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		if inTurn > 0 {
			t.Fatalf("a restart copied %d frames of the sweeps holding the write turn", inTurn)
		}
		if restarted {
			restarts++
		}
		time.Sleep(time.Millisecond)
	}
	deleted := 0
	for range sweeps {
		r := <-swept
		if r.err != nil {
			t.Fatal(r.err)
		}
		deleted += r.deleted
	}
	if deleted != rows {
		t.Fatalf("the sweeps deleted %d of %d rows", deleted, rows)
	}
	if restarts == 0 {
		t.Fatal("no restart while the sweeps ran: the test proves nothing")
	}
	t.Logf("%d restarts during the sweeps", restarts)
}

// TestCloseEmptiesWAL: a clean Close leaves an empty WAL, so the file alone
// holds everything.
func TestCloseEmptiesWAL(t *testing.T) {
	t.Parallel()
	db, path := open(t)
	fillWAL(t, db, 20)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path + "-wal")
	if err == nil && fi.Size() > 0 {
		t.Fatalf("WAL of %d bytes after Close", fi.Size())
	}
}
