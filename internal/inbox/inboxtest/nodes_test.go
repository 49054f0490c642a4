package inboxtest_test

import (
	"path/filepath"
	"testing"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/inboxtest"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
)

// TestNodesSQLite runs the multi-node cases on SQLite: two stores on one
// file, as two processes on one machine.
func TestNodesSQLite(t *testing.T) {
	t.Parallel()
	inboxtest.ExerciseNodes(t, func(t *testing.T, clock *inboxtest.Clock) func() inbox.Store {
		path := filepath.Join(t.TempDir(), "inbox.db")
		return func() inbox.Store {
			s, err := sqlite.Open(path, sqlite.Options{Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}
