package cli

import (
	"context"
	"fmt"
	"strings"
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
	return listEvents(ctx, "dead list", args[1:], std, inbox.StatusDead, listing{
		header: "ID\tRECEIVED\tSOURCE\tTENANT\tEVENT ID\tATTEMPTS\tLAST ERROR",
		row: func(e inbox.Event) string {
			return fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%d\t%s", e.ID, e.ReceivedAt.Format(time.RFC3339),
				e.Source, e.Tenant, e.EventID, e.Attempts, oneLine(e.LastError))
		},
		json: func(e inbox.Event) any {
			return deadJSON{eventJSON: toJSON(e, false), Attempts: e.Attempts, LastError: e.LastError}
		},
	})
}

// oneLine keeps a multi-line error on its table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
