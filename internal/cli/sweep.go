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
	fs := newFlags(doc{
		name: "sweep",
		text: `Remove the dedupe keys whose window has passed and the events processed
longer ago than the retention, once, now. serve sweeps on its own every
sweep_every; this is for a database no serve runs on.`,
		examples: []string{"sweep --config hookgate.yaml"},
	}, std)
	db := storeFlags(fs.FlagSet)
	if err := fs.parse(args, false); err != nil {
		return err
	}
	store, cfg, err := db.openDatabase(ctx)
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
