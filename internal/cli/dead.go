package cli

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/eventview"
	"github.com/hookgate/hookgate/internal/inbox"
)

func init() {
	register("dead", "list dead events with why they died (dead list)", runDead)
}

func runDead(ctx context.Context, args []string, std IO) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usagef("dead: want 'dead list'")
	}
	if args[0] != "list" {
		return usagef("dead: unknown subcommand %q (want list)", args[0])
	}
	return listEvents(ctx, "dead list", args[1:], std, inbox.StatusDead, listing{
		header: []string{"ID", "RECEIVED", "SOURCE", "TENANT", "EVENT ID", "ATTEMPTS", "LAST ERROR"},
		row: func(e eventview.Event) []string {
			return []string{strconv.FormatInt(e.ID, 10), e.ReceivedAt.Format(time.RFC3339), e.Source, e.Tenant,
				e.EventID, strconv.Itoa(e.Attempts), e.LastError}
		},
	})
}
