package sqlite_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/sqlite"
)

// The database and its WAL files hold every payload: only their owner may
// read them, whatever the umask.
func TestFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "hookgate.db")
	db, err := sqlite.OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := sqlite.New(db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(t.Context(), time.Minute, dedupe.Hash{1}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s: mode %o, want 600", filepath.Base(name), mode)
		}
	}
}
