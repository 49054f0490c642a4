package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/hookgate/hookgate/internal/inbox"
)

func init() {
	register("replay", "put events back to be processed (replay --dead | --source S | --id ID ... | --all; --redeliver [--destination D])", runReplay)
}

// idFlags collects repeated --id flags.
type idFlags []int64

func (f *idFlags) String() string {
	s := make([]string, len(*f))
	for i, id := range *f {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ",")
}

func (f *idFlags) Set(v string) error {
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return fmt.Errorf("%q is not an event id", v)
	}
	*f = append(*f, id)
	return nil
}

func runReplay(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "replay",
		text: `Put events back to be processed again. The recorded apply results are
kept, so the entities end where they were, and destinations that already
have an event are not called again unless --redeliver asks for it (with
the same webhook-id, so a receiver that deduplicates sees a repeat).
Events under a lease are skipped. Give at least one filter, or --all.`,
		examples: []string{
			"replay --dead",
			"replay --source stripe --since 2h",
			"replay --id 42 --redeliver --destination billing",
		},
	}, std)
	db := storeFlags(fs.FlagSet)
	var (
		f     inbox.ReplayFilter
		ids   idFlags
		since string
	)
	fs.BoolVar(&f.Dead, "dead", false, "only dead events")
	fs.StringVar(&f.Source, "source", "", "only events of this `SOURCE`")
	fs.StringVar(&f.Tenant, "tenant", "", "only events of this `TENANT`")
	fs.StringVar(&since, "since", "", "only events received since `WHEN`: a duration ago (90m, 24h, 7d) or a time (2026-03-01T10:00:00Z, 2026-03-01)")
	fs.Var(&ids, "id", "only the event with this `ID` (repeatable)")
	fs.BoolVar(&f.Redeliver, "redeliver", false, "call every destination again, even those that got the event (same webhook-id)")
	fs.StringVar(&f.Destination, "destination", "", "with --redeliver: call only `DESTINATION` again")
	fs.IntVar(&f.PageSize, "page", inbox.DefaultLimit, "replay `N` events per transaction")
	all := fs.Bool("all", false, "replay every event when no other flag narrows it")
	if err := fs.parse(args, false); err != nil {
		return err
	}
	if f.PageSize < 1 {
		return usagef("replay: --page must be positive")
	}
	// Calling a destination that already has an event repeats its side
	// effect, so only --redeliver does it: --destination alone would
	// read as a redelivery and silently be none.
	if f.Destination != "" && !f.Redeliver {
		return usagef("replay: --destination %s calls a destination again only with --redeliver; add --redeliver", f.Destination)
	}
	f.IDs = ids
	var err error
	if f.Since, err = parseWhen(since, time.Now()); err != nil {
		return usagef("replay: --since: %v", err)
	}
	if !*all && !f.Dead && f.Source == "" && f.Tenant == "" && f.Since.IsZero() && len(f.IDs) == 0 {
		return usagef("replay: no filter: this would replay every event; give --dead, --source, --tenant, --since or --id, or --all to mean it")
	}
	store, _, err := db.openDatabase(ctx)
	if err != nil {
		return err
	}
	defer store.Close()

	var progress func(int)
	live := isTerminal(std.Stdout)
	if live {
		progress = func(done int) { fmt.Fprintf(std.Stdout, "\rreplayed %d events", done) }
	}
	n, err := store.Replay(ctx, f, progress)
	if live {
		io.WriteString(std.Stdout, "\r")
	}
	if err != nil {
		return fmt.Errorf("replay: %w (replayed %d events before the error)", err, n)
	}
	fmt.Fprintf(std.Stdout, "replayed %d events\n", n)
	return nil
}

// isTerminal reports whether w is a terminal, where a progress line can be
// redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
