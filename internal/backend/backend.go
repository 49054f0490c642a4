// Package backend opens the inbox that the database setting names. It is
// the one place that knows the backends: the server and the CLI see only
// inbox.Backend.
package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	inboxpostgres "github.com/hookgate/hookgate/internal/inbox/postgres"
	inboxsqlite "github.com/hookgate/hookgate/internal/inbox/sqlite"
)

// ErrUnknown is returned by Open for a database setting no backend serves.
var ErrUnknown = errors.New("backend: unknown database")

// Options tune the opened backend.
type Options struct {
	// Now is the clock of an embedded backend (SQLite: one process, the
	// process clock); nil means time.Now. PostgreSQL always reads the
	// database's clock, so that several nodes share one.
	Now func() time.Time
	// Session is PostgreSQL's database_session: a direct URL for what
	// needs a session of its own (see inboxpostgres.Options.Session).
	Session string
	// LeadFor is how long PostgreSQL's lease on the lead lasts without a
	// Session; zero means inboxpostgres.DefaultLeadFor.
	LeadFor time.Duration
	// Logger receives the errors of what the backend does in the
	// background; nil discards them.
	Logger *slog.Logger
}

// Open opens the inbox database names: sqlite:PATH, or a postgres:// (or
// postgresql://) URL, whose query may size the connection pool
// (pool_max_conns, pool_min_conns, connect_timeout, ...).
func Open(ctx context.Context, database string, opts Options) (inbox.Backend, error) {
	switch {
	case strings.HasPrefix(database, "postgres://"), strings.HasPrefix(database, "postgresql://"):
		return inboxpostgres.Open(ctx, database, inboxpostgres.Options{Session: opts.Session, LeadFor: opts.LeadFor, Logger: opts.Logger})
	case strings.HasPrefix(database, "sqlite:") && len(database) > len("sqlite:"):
		return inboxsqlite.Open(strings.TrimPrefix(database, "sqlite:"), inboxsqlite.Options{Now: opts.Now})
	}
	return nil, fmt.Errorf("%w %q: want sqlite:PATH or postgres://…", ErrUnknown, database)
}

// SchemaVersion is the inbox schema version of the database b has open,
// which Open brought to the newest this hookgate knows.
func SchemaVersion(ctx context.Context, b inbox.Backend) (int, error) {
	switch s := b.(type) {
	case *inboxsqlite.Store:
		return s.SchemaVersion(ctx)
	case *inboxpostgres.Store:
		return s.SchemaVersion(ctx)
	}
	return 0, fmt.Errorf("%w: %T", ErrUnknown, b)
}
