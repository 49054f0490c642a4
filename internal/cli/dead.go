package cli

import (
	"context"
	"strconv"
	"time"

	"github.com/hookgate/hookgate/internal/eventview"
	"github.com/hookgate/hookgate/internal/inbox"
)

func init() {
	register("dead", "list dead events with why they died (dead list)", runDead)
}

func runDead(ctx context.Context, args []string, std IO) error {
	return runGroup(ctx, doc{
		name:     "dead",
		text:     "Dead events: those that failed for good, with why.",
		examples: []string{"dead list --source stripe", "replay --dead"},
	}, []subcommand{{"list", "list dead events, newest first, with their last error", deadList}}, args, std)
}

func deadList(ctx context.Context, args []string, std IO) error {
	return listEvents(ctx, doc{
		name: "dead list",
		text: `List dead events, newest first, with their attempts and last error.
'hookgate replay --dead' (or --id ID) puts them back.`,
		examples: []string{"dead list", "dead list --source stripe --since 1d --json"},
	}, args, std, inbox.StatusDead, listing{
		header: []string{"ID", "RECEIVED", "SOURCE", "TENANT", "EVENT ID", "ATTEMPTS", "LAST ERROR"},
		row: func(e eventview.Event) []string {
			return []string{strconv.FormatInt(e.ID, 10), e.ReceivedAt.Format(time.RFC3339), e.Source, e.Tenant,
				e.EventID, strconv.Itoa(e.Attempts), e.LastError}
		},
	})
}
