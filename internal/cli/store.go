package cli

import (
	"context"
	"flag"
	"os"

	"github.com/hookgate/hookgate/internal/backend"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
)

// storeOpts are the flags every command that opens the store shares.
type storeOpts struct {
	configPath string
	database   string
}

func storeFlags(fs *flag.FlagSet) *storeOpts {
	o := &storeOpts{}
	fs.StringVar(&o.configPath, "config", os.Getenv("HOOKGATE_CONFIG"),
		"config file (default $HOOKGATE_CONFIG; none: the embedded demo setup)")
	fs.StringVar(&o.database, "database", "", "database, sqlite:PATH or postgres://… (overrides the config's database)")
	return o
}

// config loads the configuration; demo is true when no file was given and
// the built-in defaults apply.
func (o *storeOpts) config() (cfg config.Config, demo bool, err error) {
	if o.configPath == "" {
		cfg, demo = config.Default(), true
	} else if cfg, err = config.Load(o.configPath); err != nil {
		return cfg, false, err
	}
	if o.database != "" {
		cfg.Database = o.database
	}
	return cfg, demo, nil
}

// openConfig opens the store cfg names.
func (o *storeOpts) openConfig(ctx context.Context, cfg config.Config) (inbox.Backend, error) {
	return backend.Open(ctx, cfg.Database, backend.Options{})
}

// open loads the configuration and opens its store.
func (o *storeOpts) open(ctx context.Context) (inbox.Backend, error) {
	cfg, _, err := o.config()
	if err != nil {
		return nil, err
	}
	return o.openConfig(ctx, cfg)
}

// demoSource is the source served when there is no config file.
func demoSource(secret string) config.Source {
	return config.Source{Name: "demo", Provider: config.ProviderStandard, Secret: config.NewSecret(secret)}
}
