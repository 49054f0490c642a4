package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/eventview"
	"github.com/hookgate/hookgate/internal/inbox"
)

func init() {
	register("events", "list or show stored events (events list | events show ID)", runEvents)
}

// statuses are the values --status accepts, in the order an event moves
// through them.
var statuses = []inbox.Status{inbox.StatusReceived, inbox.StatusRetry, inbox.StatusDelivering, inbox.StatusProcessed, inbox.StatusDead}

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
		header: []string{"ID", "RECEIVED", "SOURCE", "TENANT", "EVENT ID", "SCOPE", "STATUS", "APPLIED", "ATTEMPTS"},
		row: func(e eventview.Event) []string {
			return []string{strconv.FormatInt(e.ID, 10), e.ReceivedAt.Format(time.RFC3339), e.Source, e.Tenant,
				e.EventID, e.Scope, string(e.Status), string(e.Applied), strconv.Itoa(e.Attempts)}
		},
	})
}

// listing is how a list command prints events as a table; --json prints
// them in eventview's form, one object per line.
type listing struct {
	header []string
	row    func(eventview.Event) []string
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
		fs.StringVar(&statusFlag, "status", "", "only events with this status: received, retry, delivering, processed or dead")
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
		if !slices.Contains(statuses, f.Status) {
			return usagef("%s: --status %q: want received, retry, delivering, processed or dead", name, statusFlag)
		}
	}
	store, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	events, err := store.List(ctx, f)
	if err != nil {
		return err
	}
	views, err := eventview.List(ctx, store, events)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(std.Stdout)
		for _, v := range views {
			if err := enc.Encode(v); err != nil {
				return err
			}
		}
		return nil
	}
	t := newTable(std.Stdout, l.header...)
	for _, v := range views {
		t.row(l.row(v)...)
	}
	return t.flush()
}

func eventsShow(ctx context.Context, args []string, std IO) error {
	fs := newFlags("events show", std)
	db := storeFlags(fs)
	asJSON := fs.Bool("json", false, "print the event as one JSON document (the form of GET /api/events/{id})")
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
	store, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	d, err := eventview.Load(ctx, store, id)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(std.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	return writeDetail(std.Stdout, d)
}

// bodyCut is how much of a response body the text form of `events show`
// prints; --json has it whole.
const bodyCut = 60

// writeDetail prints one event for a person to read: its fields, headers
// and payload, then its deliveries and every attempt. Everything that came
// from a sender or a destination is escaped (see escape).
func writeDetail(w io.Writer, d eventview.Detail) error {
	fields := newTable(w)
	field := func(name, value string) { fields.row(name, orDash(value)) }
	field("event", strconv.FormatInt(d.ID, 10))
	field("key", d.Key)
	field("scope", d.Scope)
	field("source", d.Source)
	field("provider", d.Provider)
	field("tenant", d.Tenant)
	field("event id", d.EventID)
	field("type", d.Type)
	field("received", d.ReceivedAt.Format(time.RFC3339))
	field("status", string(d.Status))
	if !d.NextAttemptAt.IsZero() {
		field("next attempt", d.NextAttemptAt.Format(time.RFC3339))
	}
	if !d.ProcessedAt.IsZero() {
		field("processed", d.ProcessedAt.Format(time.RFC3339))
	}
	field("last error", d.LastError)
	field("attempts", fmt.Sprintf("%d to deliver, %d to process", d.Attempts, d.ProcessingAttempts))
	field("applied", string(d.Applied))
	field("transition", d.Transition)
	if d.EntityID != "" {
		field("entity", fmt.Sprintf("%s %s: state %q, version %q (as this event has it)",
			d.EntityType, d.EntityID, d.EntityState, d.EntityVersion))
	}
	if e := d.Entity; e != nil {
		field("entity now", fmt.Sprintf("state %q, version %q, written by event %d at %s",
			e.State, e.Version, e.WrittenBy, e.UpdatedAt.Format(time.RFC3339)))
	}
	if err := fields.flush(); err != nil {
		return err
	}

	var b strings.Builder
	b.WriteString("\nheaders\n")
	for _, name := range slices.Sorted(maps.Keys(d.Headers)) {
		fmt.Fprintf(&b, "  %s: %s\n", escape(name), escape(d.Headers[name]))
	}
	if len(d.Headers) == 0 {
		b.WriteString("  (none)\n")
	}
	b.WriteString("\npayload\n")
	payload := d.PayloadText
	if d.Payload != nil {
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, d.Payload, "", "  "); err == nil {
			payload = pretty.String()
		} else {
			payload = string(d.Payload)
		}
	}
	if payload == "" {
		b.WriteString("  (empty)\n")
	}
	for line := range strings.Lines(payload) {
		fmt.Fprintf(&b, "  %s\n", escapeKeeping(strings.TrimSuffix(line, "\n"), '\t'))
	}
	b.WriteString("\ndeliveries\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(d.Deliveries) == 0 {
		_, err := io.WriteString(w, "  (none)\n")
		return err
	}
	deliveries := newIndentedTable(w, "  ", "DESTINATION", "STATUS", "ATTEMPTS", "NEXT ATTEMPT", "CODE", "ERROR")
	attempts := 0
	for _, dl := range d.Deliveries {
		next := ""
		if dl.Status == inbox.DeliveryPending {
			next = "now"
			if !dl.NextAttemptAt.IsZero() {
				next = dl.NextAttemptAt.Format(time.RFC3339)
			}
		}
		deliveries.row(dl.Destination, orDash(string(dl.Status)), strconv.Itoa(dl.Attempts), orDash(next),
			code(dl.Code), orDash(dl.Error))
		attempts += len(dl.Log)
	}
	if err := deliveries.flush(); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\nattempts\n"); err != nil {
		return err
	}
	if attempts == 0 {
		_, err := io.WriteString(w, "  (none)\n")
		return err
	}
	log := newIndentedTable(w, "  ", "DESTINATION", "AT", "DURATION", "CODE", "ERROR", "RESPONSE")
	for _, dl := range d.Deliveries {
		for _, a := range dl.Log {
			took := time.Duration(a.DurationMS * float64(time.Millisecond)).Round(time.Microsecond)
			log.row(dl.Destination, a.At.Format(time.RFC3339), took.String(), code(a.Code), orDash(a.Error),
				orDash(cut(a.Body, bodyCut)))
		}
	}
	return log.flush()
}

// code is an HTTP status for a table: "-" when no response came back.
func code(c int) string {
	if c == 0 {
		return "-"
	}
	return strconv.Itoa(c)
}

// cut shortens s to at most n runes, marking a cut with "…".
func cut(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
