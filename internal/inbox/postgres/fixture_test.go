package postgres

import (
	"context"
	"strings"

	"github.com/hookgate/hookgate/internal/pgtest"
)

// Migrated is a database at this version's schema, for the tests that
// need an inbox but do not test the migration: Migrated.New(t) copies it
// as fast as pgtest.New makes an empty one, and the migration has run
// once, not once per test. Tests of the migration itself keep starting
// from an empty database (pgtest.New).
var Migrated = &pgtest.Template{
	Name: "inbox",
	Key:  strings.Join(migrations, "\x00"),
	Build: func(ctx context.Context, url string) error {
		s, err := Open(ctx, url, Options{})
		if err != nil {
			return err
		}
		s.Close()
		return nil
	},
}
