package cli

import (
	"context"
	"fmt"
	"time"
)

func init() {
	register("sweep", "remove expired dedupe keys and processed events older than the retention, once, now", runSweep)
}

func runSweep(ctx context.Context, args []string, std IO) error {
	fs := newFlags("sweep", std)
	db := storeFlags(fs)
	if err := parse(fs, args, false); err != nil {
		return err
	}
	cfg, _, err := db.config()
	if err != nil {
		return err
	}
	store, err := db.openConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	res, err := store.Sweep(ctx, time.Now().Add(-time.Duration(cfg.Retention)))
	if err != nil {
		return err
	}
	fmt.Fprintf(std.Stdout, "removed %d expired dedupe keys and %d events processed more than %s ago\n",
		res.Keys, res.Events, cfg.Retention)
	return nil
}
