package sqlitedb

import (
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

// TestCheckpointer: the background checkpointer copies the WAL into the
// database file, and empties it once it passes its bound.
func TestCheckpointer(t *testing.T) {
	t.Parallel()
	db, path := open(t)
	// The WAL passes the bound before the checkpointer starts: one that
	// ran during the fill could empty it midway and leave the rest below
	// the bound, which it then only copies.
	db.ckpt.stop()
	db.ckpt = nil
	fillWAL(t, db, 100)
	db.ckpt = startCheckpointer(db.DB, 10*time.Millisecond, 100)
	waitFor(t, "the WAL to be emptied", func() bool { return walPages(t, path) == 0 })
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pad`).Scan(&n); err != nil || n != 100 {
		t.Fatalf("%d rows after the checkpoint (%v), want 100", n, err)
	}
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
