package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

func init() {
	register("events", "list or show stored events (events list | events show ID)", runEvents)
}

// eventJSON is the --json form of an event, one object per line.
type eventJSON struct {
	ID            int64             `json:"id"`
	Key           string            `json:"key"`
	Scope         string            `json:"scope"`
	Source        string            `json:"source"`
	Provider      string            `json:"provider"`
	Tenant        string            `json:"tenant"`
	EventID       string            `json:"event_id"`
	Status        string            `json:"status"`
	ReceivedAt    time.Time         `json:"received_at"`
	EntityType    string            `json:"entity_type,omitempty"`
	EntityID      string            `json:"entity_id,omitempty"`
	EntityVersion string            `json:"entity_version,omitempty"`
	EntityState   string            `json:"entity_state,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	Payload       json.RawMessage   `json:"payload,omitempty"`
	PayloadText   string            `json:"payload_text,omitempty"`
}

func toJSON(e inbox.Event, full bool) eventJSON {
	j := eventJSON{
		ID: e.ID, Key: e.Hash.String(), Scope: e.Scope, Source: e.Source, Provider: e.Provider,
		Tenant: e.Tenant, EventID: e.EventID, Status: string(e.Status), ReceivedAt: e.ReceivedAt,
		EntityType: e.EntityType, EntityID: e.EntityID, EntityVersion: e.EntityVersion, EntityState: e.EntityState,
	}
	if full {
		j.Headers = e.Headers
		if json.Valid(e.Payload) {
			j.Payload = e.Payload
		} else {
			j.PayloadText = string(e.Payload)
		}
	}
	return j
}

func runEvents(ctx context.Context, args []string, std IO) error {
	if len(args) == 0 {
		return usagef("events: want 'events list' or 'events show ID'")
	}
	switch args[0] {
	case "list":
		return eventsList(ctx, args[1:], std)
	case "show":
		return eventsShow(ctx, args[1:], std)
	}
	return usagef("events: unknown subcommand %q (want list or show)", args[0])
}

func eventsList(ctx context.Context, args []string, std IO) error {
	return listEvents(ctx, "events list", args, std, "", listing{
		header: "ID\tRECEIVED\tSOURCE\tTENANT\tEVENT ID\tSCOPE\tSTATUS",
		row: func(e inbox.Event) string {
			return fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s\t%s", e.ID, e.ReceivedAt.Format(time.RFC3339),
				e.Source, e.Tenant, e.EventID, e.Scope, e.Status)
		},
		json: func(e inbox.Event) any { return toJSON(e, false) },
	})
}

// listing is how a list command prints events: a table, or JSON lines.
type listing struct {
	header string
	row    func(inbox.Event) string
	json   func(inbox.Event) any
}

// listEvents runs a list command: the filter flags (--status only when
// status is not fixed), the store, newest events first.
func listEvents(ctx context.Context, name string, args []string, std IO, status inbox.Status, l listing) error {
	fs := newFlags(name, std)
	db := storeFlags(fs)
	f := inbox.Filter{Status: status}
	fs.StringVar(&f.Source, "source", "", "only events of this source")
	fs.StringVar(&f.Tenant, "tenant", "", "only events of this tenant")
	var statusFlag string
	if status == "" {
		fs.StringVar(&statusFlag, "status", "", "only events with this status")
	}
	fs.IntVar(&f.Limit, "limit", 50, "at most this many events, newest first")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if f.Limit <= 0 {
		return usagef("%s: --limit must be positive", name)
	}
	if statusFlag != "" {
		f.Status = inbox.Status(statusFlag)
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
			if err := enc.Encode(l.json(e)); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, l.header)
	for _, e := range events {
		fmt.Fprintln(tw, l.row(e))
	}
	return tw.Flush()
}

func eventsShow(ctx context.Context, args []string, std IO) error {
	fs := newFlags("events show", std)
	db := storeFlags(fs)
	if err := parse(fs, args, true); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("events show: want exactly one event ID")
	}
	arg := fs.Arg(0)
	// Flags may follow the ID too: events show 5 --config F.
	if err := parse(fs, fs.Args()[1:], false); err != nil {
		return err
	}
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		return usagef("events show: event ID %q is not a number", arg)
	}
	store, err := db.open()
	if err != nil {
		return err
	}
	defer store.Close()
	e, err := store.Get(ctx, id)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(std.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(toJSON(e, true))
}
