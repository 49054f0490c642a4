package cli

import (
	"context"
	"fmt"
	"net/url"

	"github.com/hookgate/hookgate/internal/backend"
	"github.com/hookgate/hookgate/internal/config"
)

func init() {
	register("migrate", "create or upgrade the database's schema and exit (an init container or migration job)", runMigrate)
}

func runMigrate(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "migrate",
		text: `Create the configured database's tables, or bring them to this hookgate's
schema, print the schema version and exit. serve does the same when it
starts; run migrate first where the schema should change in one place
before the nodes start: an init container, a migration job, a deploy
step. Processes that migrate one database at once wait for each other,
and a database already up to date is left as it is, so running it again
is harmless. Only the database setting of --config is read: its secrets
need not be set.`,
		examples: []string{
			"migrate --config hookgate.yaml",
			"migrate --database postgres://hookgate@db:5432/hookgate",
			"migrate --database sqlite:/var/lib/hookgate/hookgate.db",
		},
	}, std)
	db := storeFlags(fs.FlagSet)
	if err := fs.parse(args, false); err != nil {
		return err
	}
	cfg, _, err := db.load(config.LoadDatabase)
	if err != nil {
		return err
	}
	store, err := db.openConfig(ctx, cfg, nil)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", shownDatabase(cfg.Database), err)
	}
	defer store.Close()
	v, err := backend.SchemaVersion(ctx, store)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", shownDatabase(cfg.Database), err)
	}
	_, err = fmt.Fprintf(std.Stdout, "database %s: schema at version %d, up to date\n", shownDatabase(cfg.Database), v)
	return err
}

// shownDatabase is the database setting as it may be printed: a URL's
// password is masked.
func shownDatabase(database string) string {
	if u, err := url.Parse(database); err == nil && u.User != nil {
		return u.Redacted()
	}
	return database
}
