package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/hookgate/hookgate/internal/admin"
	"github.com/hookgate/hookgate/internal/inbox"
)

func init() {
	register("stats", "counts by source and status, dedupe hit rate, oldest pending event, destination health", runStats)
}

func runStats(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "stats",
		text: `Print per source the events by status, the intake counts and the dedupe
hit rate; the number of pending events and the age of the oldest; and the
health of each destination. Reads only the database.`,
		examples: []string{"stats --config hookgate.yaml", "stats --database sqlite:/var/lib/hookgate/hookgate.db --json"},
	}, std)
	db := storeFlags(fs.FlagSet)
	asJSON := fs.Bool("json", false, "print the stats as JSON (the form of GET /api/stats)")
	if err := fs.parse(args, false); err != nil {
		return err
	}
	store, _, err := db.openDatabase(ctx)
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
	sources := newTable(std.Stdout, "SOURCE", "RECEIVED", "RETRY", "DELIVERING", "PROCESSED", "DEAD",
		"ACCEPTED", "DUPLICATES", "DEDUPE HIT RATE")
	for _, name := range slices.Sorted(maps.Keys(st.Sources)) {
		s := st.Sources[name]
		sources.row(name, strconv.Itoa(s.ByStatus[inbox.StatusReceived]), strconv.Itoa(s.ByStatus[inbox.StatusRetry]),
			strconv.Itoa(s.ByStatus[inbox.StatusDelivering]), strconv.Itoa(s.ByStatus[inbox.StatusProcessed]),
			strconv.Itoa(s.ByStatus[inbox.StatusDead]), strconv.FormatInt(s.Accepted, 10), strconv.FormatInt(s.Duplicates, 10),
			fmt.Sprintf("%.1f%%", 100*s.DedupeHitRate))
	}
	if err := sources.flush(); err != nil {
		return err
	}
	if st.Pending == 0 {
		_, err = fmt.Fprintln(std.Stdout, "\npending: 0")
	} else {
		age := now.Sub(st.OldestPending).Round(time.Second)
		_, err = fmt.Fprintf(std.Stdout, "\npending: %d, oldest received %s (%s ago)\n",
			st.Pending, st.OldestPending.Format(time.RFC3339), age)
	}
	if err != nil || len(st.Lanes) == 0 {
		return err
	}
	fmt.Fprintln(std.Stdout)
	lanes := newTable(std.Stdout, "SOURCE", "DESTINATION", "STATE", "FAILURES", "PAUSED UNTIL", "PENDING", "LAST ERROR")
	for _, l := range st.Lanes {
		until := ""
		if !l.Until.IsZero() {
			until = l.Until.Format(time.RFC3339)
		}
		state := l.State
		if l.Blocked > 0 {
			state += fmt.Sprintf(" (%d keys blocked)", l.Blocked)
		}
		lanes.row(l.Source, l.Destination, state, strconv.Itoa(l.Failures), orDash(until), strconv.Itoa(l.Pending), orDash(l.LastError))
	}
	return lanes.flush()
}
