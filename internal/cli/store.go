package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hookgate/hookgate/internal/backend"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/provider"
)

// storeOpts are the flags every command that opens the store shares.
type storeOpts struct {
	configPath string
	database   string
}

func storeFlags(fs *flag.FlagSet) *storeOpts {
	o := &storeOpts{}
	fs.StringVar(&o.configPath, "config", os.Getenv("HOOKGATE_CONFIG"),
		"config `FILE` (default $HOOKGATE_CONFIG; none: the embedded demo setup)")
	fs.StringVar(&o.database, "database", "", "`DATABASE`, sqlite:PATH or postgres://… (overrides the config's database)")
	return o
}

// config loads the configuration; demo is true when no file was given and
// the built-in defaults apply.
func (o *storeOpts) config() (cfg config.Config, demo bool, err error) {
	return o.load(config.Load)
}

// load reads the configuration with read, or takes the defaults when no
// file was given (demo), and applies --database.
func (o *storeOpts) load(read func(string) (config.Config, error)) (cfg config.Config, demo bool, err error) {
	if o.configPath == "" {
		cfg, demo = config.Default(), true
	} else if cfg, err = read(o.configPath); err != nil {
		return cfg, false, err
	}
	if o.database != "" {
		cfg.Database = o.database
	}
	return cfg, demo, nil
}

// openConfig opens the store cfg names, logging to log (nil: nowhere)
// what it does in the background. A lease on the lead lasts two sweep
// periods and ten seconds: the leader renews it at each sweep, and a
// sweep that starts late still finds it held.
func (o *storeOpts) openConfig(ctx context.Context, cfg config.Config, log *slog.Logger) (inbox.Backend, error) {
	return backend.Open(ctx, cfg.Database, backend.Options{Session: cfg.DatabaseSession,
		LeadFor: 2*time.Duration(cfg.SweepEvery) + 10*time.Second, Logger: log})
}

// openDatabase opens the database for a command that only works on it
// (events, dead, stats, replay, sweep): a config file is read without its
// secrets (config.LoadDatabase), and a SQLite file that is not there is
// refused, where opening it would create an empty database and show empty
// tables as if nothing had arrived.
func (o *storeOpts) openDatabase(ctx context.Context) (inbox.Backend, config.Config, error) {
	cfg, demo, err := o.load(config.LoadDatabase)
	if err != nil {
		return nil, cfg, err
	}
	if path := cfg.SQLitePath(); path != "" {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			shown := path
			if !filepath.IsAbs(shown) {
				shown = "." + string(filepath.Separator) + filepath.Clean(shown)
			}
			if demo && o.database == "" {
				return nil, cfg, fmt.Errorf("no hookgate database at %s; pass --config or --database", shown)
			}
			return nil, cfg, fmt.Errorf("no hookgate database at %s (hookgate serve creates it on its first start)", shown)
		}
	}
	store, err := o.openConfig(ctx, cfg, nil)
	return store, cfg, err
}

// demoSource is the source served when there is no config file.
func demoSource(secret string) config.Source {
	return config.Source{Name: "demo", Provider: provider.Standard, Secret: config.NewSecret(secret)}
}
