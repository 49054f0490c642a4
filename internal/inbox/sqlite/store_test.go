package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/inboxtest"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
)

// open opens a store on a fresh file that reads time from now.
func open(t *testing.T, clock *inboxtest.Clock) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestInbox(t *testing.T) {
	t.Parallel()
	inboxtest.Exercise(t, func(t *testing.T, clock *inboxtest.Clock) inbox.Store {
		return open(t, clock)
	})
}
