package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

func init() {
	register("dead", "list dead events with why they died (dead list)", runDead)
}

// deadJSON is the --json form of a dead event: the events list fields and
// why it died.
type deadJSON struct {
	eventJSON
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
}

func runDead(ctx context.Context, args []string, std IO) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usagef("dead: want 'dead list'")
	}
	if args[0] != "list" {
		return usagef("dead: unknown subcommand %q (want list)", args[0])
	}
	fs := newFlags("dead list", std)
	db := storeFlags(fs)
	f := inbox.Filter{Status: inbox.StatusDead}
	fs.StringVar(&f.Source, "source", "", "only events of this source")
	fs.IntVar(&f.Limit, "limit", 50, "at most this many events, newest first")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	if err := parse(fs, args[1:], false); err != nil {
		return err
	}
	if f.Limit <= 0 {
		return usagef("dead list: --limit must be positive")
	}
	store, err := db.open()
	if err != nil {
		return err
	}
	defer store.Close()
	events, err := store.List(ctx, f)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(std.Stdout)
		for _, e := range events {
			if err := enc.Encode(deadJSON{eventJSON: toJSON(e, false), Attempts: e.Attempts, LastError: e.LastError}); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRECEIVED\tSOURCE\tTENANT\tEVENT ID\tATTEMPTS\tLAST ERROR")
	for _, e := range events {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", e.ID, e.ReceivedAt.Format(time.RFC3339),
			e.Source, e.Tenant, e.EventID, e.Attempts, oneLine(e.LastError))
	}
	return tw.Flush()
}

// oneLine keeps a multi-line error on its table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
