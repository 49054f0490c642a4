package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/hookgate/hookgate/internal/admin"
	"github.com/hookgate/hookgate/internal/inbox"
)

func init() {
	register("stats", "counts by source and status, dedupe hit rate, oldest pending event", runStats)
}

func runStats(ctx context.Context, args []string, std IO) error {
	fs := newFlags("stats", std)
	db := storeFlags(fs)
	asJSON := fs.Bool("json", false, "print the stats as JSON (the form of GET /api/stats)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	store, err := db.open()
	if err != nil {
		return err
	}
	defer store.Close()
	raw, err := store.Stats(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	st := admin.NewStats(raw, now)
	if *asJSON {
		enc := json.NewEncoder(std.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	names := make([]string, 0, len(st.Sources))
	for name := range st.Sources {
		names = append(names, name)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tRECEIVED\tRETRY\tPROCESSED\tDEAD\tACCEPTED\tDUPLICATES\tDEDUPE HIT RATE")
	for _, name := range names {
		s := st.Sources[name]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f%%\n", name,
			s.ByStatus[inbox.StatusReceived], s.ByStatus[inbox.StatusRetry], s.ByStatus[inbox.StatusProcessed],
			s.ByStatus[inbox.StatusDead], s.Accepted, s.Duplicates, 100*s.DedupeHitRate)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if st.Pending == 0 {
		_, err = fmt.Fprintln(std.Stdout, "\npending: 0")
		return err
	}
	age := now.Sub(st.OldestPending).Round(time.Second)
	_, err = fmt.Fprintf(std.Stdout, "\npending: %d, oldest received %s (%s ago)\n",
		st.Pending, st.OldestPending.Format(time.RFC3339), age)
	return err
}
