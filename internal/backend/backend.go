// Package backend opens the inbox that the database setting names. It is
// the one place that knows the backends: the server and the CLI see only
// inbox.Backend.
package backend

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	inboxsqlite "github.com/hookgate/hookgate/internal/inbox/sqlite"
)

// ErrUnknown is returned by Open for a database setting no backend serves.
var ErrUnknown = errors.New("backend: unknown database")

// Options tune the opened backend.
type Options struct {
	// Now is the clock of an embedded backend (SQLite: one process, the
	// process clock); nil means time.Now.
	Now func() time.Time
}

// Open opens the inbox database names: sqlite:PATH.
func Open(database string, opts Options) (inbox.Backend, error) {
	if path, ok := strings.CutPrefix(database, "sqlite:"); ok && path != "" {
		return inboxsqlite.Open(path, inboxsqlite.Options{Now: opts.Now})
	}
	return nil, fmt.Errorf("%w %q: want sqlite:PATH", ErrUnknown, database)
}
