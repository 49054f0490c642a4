package cli

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/alert"
	"github.com/hookgate/hookgate/internal/inbox"
)

func init() {
	register("incidents", "list open incidents (a destination failing, a silent source), --all for the ended ones too", runIncidents)
}

// incidentJSON is an incident as --json prints it.
type incidentJSON struct {
	ID          int64            `json:"id"`
	Kind        string           `json:"kind"`
	Source      string           `json:"source,omitempty"`
	Destination string           `json:"destination,omitempty"`
	OpenedAt    time.Time        `json:"opened_at"`
	ResolvedAt  *time.Time       `json:"resolved_at,omitempty"`
	SeenAt      time.Time        `json:"seen_at"`
	Counts      map[string]int64 `json:"counts,omitempty"`
	LastError   string           `json:"last_error,omitempty"`
}

func runIncidents(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "incidents",
		text: `List the incidents: open ones first, newest first, then with --all the
ended ones. Incidents are kept in the database, shared by every node;
alerts.channels says where they are notified.`,
		examples: []string{"incidents", "incidents --all --json"},
	}, std)
	db := storeFlags(fs.FlagSet)
	all := fs.Bool("all", false, "list the ended incidents too")
	limit := fs.Int("limit", 100, "at most `N` incidents")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	if err := fs.parse(args, false); err != nil {
		return err
	}
	if *limit <= 0 {
		return usagef("incidents: --limit must be positive")
	}
	store, _, err := db.openDatabase(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	inc, ok := store.(inbox.Incidents)
	if !ok {
		return errors.New("incidents: this database keeps no incidents")
	}
	list, err := inc.ListIncidents(ctx, *all, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(std.Stdout)
		for _, i := range list {
			out := incidentJSON{ID: i.ID, Kind: i.Kind, Source: i.Source, Destination: i.Destination,
				OpenedAt: i.OpenedAt.UTC(), SeenAt: i.SeenAt.UTC(), Counts: alert.Counts(i.Counts), LastError: i.LastError}
			if !i.Open() {
				at := i.ResolvedAt.UTC()
				out.ResolvedAt = &at
			}
			if err := enc.Encode(out); err != nil {
				return err
			}
		}
		return nil
	}
	t := newTable(std.Stdout, "ID", "KIND", "SOURCE", "DESTINATION", "OPENED", "ENDED", "COUNTS", "LAST ERROR")
	for _, i := range list {
		ended := "open"
		if !i.Open() {
			ended = "after " + i.ResolvedAt.Sub(i.OpenedAt).Round(time.Second).String()
		}
		t.row(strconv.FormatInt(i.ID, 10), i.Kind, orDash(i.Source), orDash(i.Destination),
			i.OpenedAt.UTC().Format(time.RFC3339), ended, orDash(counts(alert.Counts(i.Counts))), orDash(i.LastError))
	}
	return t.flush()
}

// counts writes counts as "dead=3 pending=12", by name.
func counts(c map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, k+"="+strconv.FormatInt(c[k], 10))
	}
	return strings.Join(parts, " ")
}
