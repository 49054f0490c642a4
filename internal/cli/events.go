package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/eventview"
	"github.com/hookgate/hookgate/internal/inbox"
)

func init() {
	register("events", "list, show or follow stored events (events list | show | tail)", runEvents)
}

// statuses are the values --status accepts, in the order an event moves
// through them.
var statuses = []inbox.Status{inbox.StatusReceived, inbox.StatusRetry, inbox.StatusDelivering, inbox.StatusProcessed, inbox.StatusDead}

// outcomes are the values --apply accepts.
var outcomes = []inbox.ApplyOutcome{inbox.ApplyApplied, inbox.ApplyUnchanged, inbox.ApplyStale, inbox.ApplyNone, inbox.ApplyPending, inbox.ApplyTie}

func runEvents(ctx context.Context, args []string, std IO) error {
	return runGroup(ctx, doc{
		name: "events",
		text: `Stored events: search them, show one with its deliveries and attempts,
or follow new ones as they arrive. Every events command reads only the
database, so it works beside a running serve.`,
		examples: []string{
			"events list --since 2h --status dead",
			"events show evt_1MqLQk2eZvKYlo2C",
			"events tail --source stripe",
		},
	}, []subcommand{
		{"list", "list events, newest first, by source, tenant, status, time, event id or key", eventsList},
		{"show", "show one event (by ID, provider event id or key) with its deliveries and attempts", eventsShow},
		{"tail", "print events as they arrive, until interrupted", eventsTail},
	}, args, std)
}

func eventsList(ctx context.Context, args []string, std IO) error {
	return listEvents(ctx, doc{
		name: "events list",
		text: `List stored events, newest first. Filters combine; --before pages on to
older events (the smallest ID of the last page).`,
		examples: []string{
			"events list --since 2h --status dead",
			"events list --source stripe --tenant acct_1 --apply stale",
			"events list --event-id evt_1MqLQk2eZvKYlo2C --json",
			"events list --since 2026-03-01T00:00:00Z --until 2026-03-02T00:00:00Z",
		},
	}, args, std, "", listing{
		header: []string{"ID", "RECEIVED", "SOURCE", "TENANT", "EVENT ID", "SCOPE", "STATUS", "APPLIED", "ATTEMPTS"},
		row: func(e eventview.Event) []string {
			return []string{strconv.FormatInt(e.ID, 10), e.ReceivedAt.Format(time.RFC3339), e.Source, e.Tenant,
				e.EventID, e.Scope, string(e.Status), applied(e), strconv.Itoa(e.Attempts)}
		},
	})
}

// applied is the APPLIED column of an event: its apply outcome, marked
// when it was a version tie.
func applied(e eventview.Event) string {
	if e.Tie {
		return string(e.Applied) + " (tie)"
	}
	return string(e.Applied)
}

// listing is how a list command prints events as a table; --json prints
// them in eventview's form, one object per line.
type listing struct {
	header []string
	row    func(eventview.Event) []string
}

// filterFlags are the flags that select events, shared by list and tail.
type filterFlags struct {
	filter             inbox.Filter
	status, apply, key string
	since, until       string
}

// addFilterFlags defines the filter flags on fs; --status only when status
// is not fixed by the command.
func addFilterFlags(fs *flag.FlagSet, status inbox.Status) *filterFlags {
	f := &filterFlags{filter: inbox.Filter{Status: status}}
	fs.StringVar(&f.filter.Source, "source", "", "only events of this `SOURCE`")
	fs.StringVar(&f.filter.Tenant, "tenant", "", "only events of this `TENANT`")
	if status == "" {
		fs.StringVar(&f.status, "status", "", "only events with this `STATUS`: received, retry, delivering, processed or dead")
	}
	fs.StringVar(&f.filter.EventID, "event-id", "", "only events with this provider event `ID`")
	fs.StringVar(&f.key, "key", "", "only events with this `KEY` (32 hex digits, as events show prints it)")
	fs.StringVar(&f.apply, "apply", "", "only events with this apply `OUTCOME`: applied, unchanged, stale, none, pending (not applied yet) or tie (its version equalled the entity's)")
	fs.StringVar(&f.since, "since", "", "only events received since `WHEN`: a duration ago (90m, 2h, 7d) or a time (2026-03-01T10:00:00Z, 2026-03-01)")
	fs.StringVar(&f.until, "until", "", "only events received before `WHEN`: a duration ago or a time, as --since")
	return f
}

// resolve checks the flags' values and completes the filter; now is
// what durations count back from.
func (f *filterFlags) resolve(name string, now time.Time) (inbox.Filter, error) {
	if f.status != "" {
		f.filter.Status = inbox.Status(f.status)
		if !slices.Contains(statuses, f.filter.Status) {
			return f.filter, usagef("%s: --status %q: want received, retry, delivering, processed or dead", name, f.status)
		}
	}
	if f.apply != "" {
		f.filter.Outcome = inbox.ApplyOutcome(f.apply)
		if !slices.Contains(outcomes, f.filter.Outcome) {
			return f.filter, usagef("%s: --apply %q: want applied, unchanged, stale, none, pending or tie", name, f.apply)
		}
	}
	if f.key != "" {
		h, err := dedupe.ParseHash(f.key)
		if err != nil || h == (dedupe.Hash{}) {
			return f.filter, usagef("%s: --key %q: want the 32 hex digits of a key", name, f.key)
		}
		f.filter.Hash = h
	}
	var err error
	if f.filter.Since, err = parseWhen(f.since, now); err != nil {
		return f.filter, usagef("%s: --since: %v", name, err)
	}
	if f.filter.Until, err = parseWhen(f.until, now); err != nil {
		return f.filter, usagef("%s: --until: %v", name, err)
	}
	if !f.filter.Since.IsZero() && !f.filter.Until.IsZero() && !f.filter.Until.After(f.filter.Since) {
		return f.filter, usagef("%s: --until %s is not after --since %s", name, f.until, f.since)
	}
	return f.filter, nil
}

// parseWhen reads a point in time: "" (none), a duration before now (with
// d for days: 7d, 1d12h), an RFC 3339 time or a date (UTC midnight).
func parseWhen(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	d, err := config.ParseDuration(v)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("%q: want a positive duration (90m, 2h, 7d) or a time (2026-03-01T10:00:00Z, 2026-03-01)", v)
	}
	return now.Add(-d), nil
}

// listEvents runs a list command: the filter flags (--status only when
// status is not fixed), the store, newest events first.
func listEvents(ctx context.Context, d doc, args []string, std IO, status inbox.Status, l listing) error {
	fs := newFlags(d, std)
	db := storeFlags(fs.FlagSet)
	ff := addFilterFlags(fs.FlagSet, status)
	limit := fs.Int("limit", 50, "at most `N` events, newest first")
	before := fs.Int64("before", 0, "only events with an ID smaller than `ID` (the next page)")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	if err := fs.parse(args, false); err != nil {
		return err
	}
	if *limit <= 0 {
		return usagef("%s: --limit must be positive", d.name)
	}
	f, err := ff.resolve(d.name, time.Now())
	if err != nil {
		return err
	}
	f.Limit, f.BeforeID = *limit, *before
	store, _, err := db.openDatabase(ctx)
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
		return writeJSONLines(std.Stdout, views)
	}
	t := newTable(std.Stdout, l.header...)
	for _, v := range views {
		t.row(l.row(v)...)
	}
	return t.flush()
}

// writeJSONLines prints each view as one JSON object on its own line.
func writeJSONLines(w io.Writer, views []eventview.Event) error {
	enc := json.NewEncoder(w)
	for _, v := range views {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}

func eventsShow(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "events show",
		args: "ID|EVENT-ID|KEY [flags]",
		text: `Show one event: its key, scope, tenant and provider event id, the
payload and headers as stored, what applying it did and the entity's
state now, and per destination its delivery and every attempt.

The event is named by its ID (a number, as events list prints it), by
the provider's event id, or by its key (32 hex digits). A number is
taken as an ID first. When a provider event id names several events
(one per source or tenant), they are listed: narrow with --source or
--tenant, or show one by ID.`,
		examples: []string{
			"events show 42",
			"events show evt_1MqLQk2eZvKYlo2C --source stripe",
			"events show 5d41402abc4b2a76b9719d911017c592 --json",
		},
	}, std)
	db := storeFlags(fs.FlagSet)
	source := fs.String("source", "", "with a provider event id: only events of this `SOURCE`")
	tenant := fs.String("tenant", "", "with a provider event id: only events of this `TENANT`")
	asJSON := fs.Bool("json", false, "print the event as one JSON document (the form of GET /api/events/{id})")
	if err := fs.parse(args, true); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("events show: want one event: its ID, provider event id or key")
	}
	arg := fs.Arg(0)
	// Flags may follow the event too: events show 5 --config F.
	if err := fs.parse(fs.Args()[1:], false); err != nil {
		return err
	}
	if strings.TrimSpace(arg) == "" {
		return usagef("events show: want one event: its ID, provider event id or key")
	}
	store, _, err := db.openDatabase(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	id, err := findEvent(ctx, store, arg, inbox.Filter{Source: *source, Tenant: *tenant})
	if err != nil {
		return err
	}
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

// findEvent returns the ID of the one event arg names: an ID, else a key
// (32 hex digits), else a provider event id, the last two narrowed by
// within's source and tenant.
func findEvent(ctx context.Context, store inbox.Store, arg string, within inbox.Filter) (int64, error) {
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil && id > 0 {
		if _, err := store.Get(ctx, id); err == nil {
			return id, nil
		} else if !errors.Is(err, inbox.ErrNotFound) {
			return 0, err
		}
	}
	what := "provider event id"
	f := within
	f.Limit = 20
	// The zero hash is "any key" to List, and no key hashes to it.
	if h, err := dedupe.ParseHash(arg); err == nil && h != (dedupe.Hash{}) {
		what, f.Hash = "key", h
	} else {
		f.EventID = arg
	}
	found, err := store.List(ctx, f)
	if err != nil {
		return 0, err
	}
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("events show: no event with ID, key or provider event id %q", arg)
	case 1:
		return found[0].ID, nil
	}
	var b strings.Builder
	for _, e := range found {
		fmt.Fprintf(&b, "\n  %d  %s  source %s  tenant %s", e.ID, e.ReceivedAt.Format(time.RFC3339),
			escape(e.Source), escape(orDash(e.Tenant)))
	}
	if len(found) == f.Limit {
		b.WriteString("\n  …")
	}
	return 0, fmt.Errorf("events show: %s %q names several events; show one by ID, or narrow with --source or --tenant:%s",
		what, arg, b.String())
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
	if d.Via != "" {
		field("via", d.Via+" (recovered: the provider listed it, no webhook of it came)")
	}
	field("status", string(d.Status))
	if !d.NextAttemptAt.IsZero() {
		field("next attempt", d.NextAttemptAt.Format(time.RFC3339))
	}
	if !d.ProcessedAt.IsZero() {
		field("processed", d.ProcessedAt.Format(time.RFC3339))
	}
	field("last error", d.LastError)
	field("attempts", fmt.Sprintf("%d to deliver, %d to process", d.Attempts, d.ProcessingAttempts))
	if d.Tie {
		field("applied", string(d.Applied)+" (a tie: the entity had this version already; ties are applied in arrival order)")
	} else {
		field("applied", string(d.Applied))
	}
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
	// The body is in one of the three fields; a body that is not UTF-8
	// (PayloadBase64) is printed as text too, its invalid bytes escaped.
	payload := d.PayloadText + string(d.PayloadBase64)
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
