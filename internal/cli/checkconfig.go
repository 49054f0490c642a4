package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/source"
)

func init() {
	register("check-config", "validate a config file and print the resolved sources (secrets masked)", runCheckConfig)
}

func runCheckConfig(_ context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "check-config",
		text: `Validate a config file, read its secrets, and print the resolved
configuration with every secret masked.`,
		examples: []string{"check-config --config hookgate.yaml"},
	}, std)
	db := storeFlags(fs.FlagSet)
	if err := fs.parse(args, false); err != nil {
		return err
	}
	if db.configPath == "" {
		return usagef("check-config: --config (or HOOKGATE_CONFIG) is required")
	}
	cfg, _, err := db.config()
	if err != nil {
		return err
	}
	for _, sc := range cfg.Sources {
		if _, err := source.New(sc, cfg.Dedupe); err != nil {
			return fmt.Errorf("source %s: %w", sc.Name, err)
		}
	}
	// A destination's URL may carry tokens in its userinfo, path or
	// query; it is shown as everywhere else, scheme and host only.
	for i := range cfg.Sources {
		for j := range cfg.Sources[i].Destinations {
			d := &cfg.Sources[i].Destinations[j]
			d.URL = deliver.Redact(d.URL)
		}
	}
	out, err := cfg.Redacted()
	if err != nil {
		return err
	}
	printWarnings(std.Stderr, cfg)
	fmt.Fprintf(std.Stdout, "# %s: valid, %d source(s)\n", db.configPath, len(cfg.Sources))
	_, err = std.Stdout.Write(out)
	return err
}

// printWarnings prints what cfg allows but probably does not mean
// ([config.Config.Warnings]), one "warning: " line each: check-config and
// serve go on.
func printWarnings(w io.Writer, cfg config.Config) {
	for _, s := range cfg.Warnings() {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
}
