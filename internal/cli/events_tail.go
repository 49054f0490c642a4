package cli

import (
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/eventview"
	"github.com/hookgate/hookgate/internal/inbox"
)

func eventsTail(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "events tail",
		text: `Print events as they are stored, one line each, until interrupted
(Ctrl-C). It reads the database, so it follows a serve running on the
same database, or several on one PostgreSQL database. It starts with the
last few events (--last).`,
		examples: []string{
			"events tail",
			"events tail --source stripe --json",
			"events tail --config hookgate.yaml --last 0 --interval 200ms",
		},
	}, std)
	db := storeFlags(fs.FlagSet)
	var f inbox.Filter
	fs.StringVar(&f.Source, "source", "", "only events of this `SOURCE`")
	fs.StringVar(&f.Tenant, "tenant", "", "only events of this `TENANT`")
	last := fs.Int("last", 10, "start with the `N` newest events")
	interval := fs.Duration("interval", time.Second, "look for new events every `DURATION`")
	asJSON := fs.Bool("json", false, "print one JSON object per line (the form of events list --json)")
	if err := fs.parse(args, false); err != nil {
		return err
	}
	if *last < 0 {
		return usagef("events tail: --last must not be negative")
	}
	if *interval <= 0 {
		return usagef("events tail: --interval must be positive")
	}
	store, _, err := db.openDatabase(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	print := func(events []inbox.Event) error {
		// A poll that found nothing writes nothing: a reader of a pipe
		// takes an empty write for a stalled writer.
		if len(events) == 0 {
			return nil
		}
		views, err := eventview.List(ctx, store, events)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSONLines(std.Stdout, views)
		}
		return writeTailLines(std.Stdout, views)
	}
	fl := &follower{store: store, filter: f, settle: tailSettle, now: time.Now}
	first, err := fl.start(ctx, *last)
	if err == nil {
		err = print(first)
	}
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for err == nil {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		var events []inbox.Event
		if events, err = fl.poll(ctx); err == nil {
			err = print(events)
		}
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// writeTailLines prints one line per event: ID, time received, source,
// tenant, provider event id, type and status.
func writeTailLines(w io.Writer, views []eventview.Event) error {
	var b strings.Builder
	for _, v := range views {
		fields := []string{strconv.FormatInt(v.ID, 10), v.ReceivedAt.Format(time.RFC3339), v.Source,
			v.Tenant, v.EventID, v.Type, string(v.Status)}
		for i, f := range fields {
			fields[i] = escape(orDash(f))
		}
		b.WriteString(strings.Join(fields, "  ") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

const (
	// tailPage is how many events one List of a tail reads.
	tailPage = 500
	// tailSettle is how long a tail keeps looking below the largest ID it
	// has printed. IDs are taken when events are written and become
	// visible when their transaction commits; on PostgreSQL, with several
	// writers, an event can commit after one with a larger ID, and a
	// cursor that only moved forward would skip it.
	tailSettle = 5 * time.Second
)

// lister reads stored events: the inbox itself (events tail) or a
// gateway's admin API (listen). It answers as inbox.Store.List does,
// newest first, honouring the filter's Source, Tenant, AfterID, BeforeID
// and Limit.
type lister interface {
	List(ctx context.Context, f inbox.Filter) ([]inbox.Event, error)
}

// follower reads the events stored after a point, each once.
type follower struct {
	store  lister
	filter inbox.Filter
	settle time.Duration
	now    func() time.Time

	// cursor is the largest ID seen; marks are the cursors of the polls
	// within settle, oldest first, and from is the cursor of the newest
	// poll before them: every poll reads again from there, and printed
	// holds the IDs above it that were already returned.
	cursor  int64
	marks   []mark
	from    int64
	printed map[int64]bool
}

// mark is the cursor as it stood at a poll.
type mark struct {
	at     time.Time
	cursor int64
}

// start returns the newest n events matching the filter, oldest first, and
// places the cursor after the newest event stored.
func (f *follower) start(ctx context.Context, n int) ([]inbox.Event, error) {
	f.printed = map[int64]bool{}
	newest, err := f.store.List(ctx, inbox.Filter{Limit: 1})
	if err != nil || len(newest) == 0 {
		return nil, err
	}
	f.cursor, f.from = newest[0].ID, newest[0].ID
	if n == 0 {
		return nil, nil
	}
	page := f.filter
	page.Limit, page.BeforeID = n, f.cursor+1
	events, err := f.store.List(ctx, page)
	slices.Reverse(events)
	return events, err
}

// resume places the follower where a saved [follower.position] left it:
// polls return the events after from, but not those of returned.
func (f *follower) resume(from int64, returned []int64) {
	f.from, f.cursor, f.marks = from, from, nil
	f.printed = map[int64]bool{}
	for _, id := range returned {
		if id > from {
			f.printed[id] = true
			f.cursor = max(f.cursor, id)
		}
	}
}

// position is where the follower stands between polls: every event with
// an ID up to from, and those of returned, has been returned by a poll;
// any other event stored is still to come. [follower.resume] takes it
// back.
func (f *follower) position() (from int64, returned []int64) {
	return f.from, slices.Sorted(maps.Keys(f.printed))
}

// poll returns the events stored since the last poll, oldest first. A
// poll that fails returns nothing and changes nothing: the next reads the
// same events again.
func (f *follower) poll(ctx context.Context) ([]inbox.Event, error) {
	events, err := f.read(ctx, f.from)
	if err != nil {
		return nil, err
	}
	var out []inbox.Event
	for _, e := range events {
		if !f.printed[e.ID] {
			f.printed[e.ID] = true
			f.cursor = max(f.cursor, e.ID)
			out = append(out, e)
		}
	}
	now := f.now()
	f.marks = append(f.marks, mark{at: now, cursor: f.cursor})
	for len(f.marks) > 0 && now.Sub(f.marks[0].at) >= f.settle {
		f.from = f.marks[0].cursor
		f.marks = f.marks[1:]
	}
	for id := range f.printed {
		if id <= f.from {
			delete(f.printed, id)
		}
	}
	return out, nil
}

// read returns the events matching the filter with an ID above after,
// oldest first, reading as many pages as it takes.
func (f *follower) read(ctx context.Context, after int64) ([]inbox.Event, error) {
	page := f.filter
	page.Limit = tailPage
	if after == 0 {
		// AfterID zero is no bound (an empty inbox at the start, or a
		// listen that starts before the first event): List reads the
		// newest page, and the pages go back from there.
		var all []inbox.Event
		for {
			events, err := f.store.List(ctx, page)
			if err != nil {
				return nil, err
			}
			all = append(all, events...)
			if len(events) < tailPage {
				slices.Reverse(all)
				return all, nil
			}
			page.BeforeID = events[len(events)-1].ID
		}
	}
	var out []inbox.Event
	for {
		page.AfterID = after
		events, err := f.store.List(ctx, page)
		if err != nil {
			return nil, err
		}
		slices.Reverse(events)
		out = append(out, events...)
		if len(events) < tailPage {
			return out, nil
		}
		after = events[len(events)-1].ID
	}
}
