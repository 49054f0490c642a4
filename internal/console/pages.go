package console

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/admin"
	"github.com/hookgate/hookgate/internal/eventview"
	"github.com/hookgate/hookgate/internal/inbox"
)

// sourceRow is one source of the overview.
type sourceRow struct {
	Name string
	admin.SourceStats
	// Counts are the source's events by status, in the order of statuses.
	Counts []int
}

// overviewData is what the overview shows.
type overviewData struct {
	Stats   admin.Stats
	Sources []sourceRow
	// OldestPending is the age of the oldest pending event; 0 when none.
	OldestPending time.Duration
	Dead          int
	// Hour and Day are the charts; nil when the store counts no
	// activity.
	Hour, Day *chart
	Statuses  []inbox.Status
}

func (c *console) overview(w http.ResponseWriter, r *http.Request, sess *session) error {
	st, err := c.store.Stats(r.Context())
	if err != nil {
		return err
	}
	stats := admin.NewStats(st, c.now())
	d := overviewData{Stats: stats, OldestPending: time.Duration(stats.OldestPendingSeconds * float64(time.Second)).Round(time.Second),
		Statuses: statuses}
	if c.hour != nil {
		now := c.now()
		minutes, err := c.hour.read(r.Context(), now, nil)
		if err != nil {
			return err
		}
		day, err := c.day.read(r.Context(), now, minutes)
		if err != nil {
			return err
		}
		h := newChart("Last hour", "events per minute", minutes[len(minutes)-60:], time.Minute, 10)
		dd := newChart("Last 24 hours", "events per hour", day, time.Hour, 3)
		d.Hour, d.Day = &h, &dd
	}
	d.Stats.Lanes = c.lanes(stats.Lanes)
	for _, name := range slices.Sorted(maps.Keys(stats.Sources)) {
		s := stats.Sources[name]
		row := sourceRow{Name: name, SourceStats: s}
		for _, st := range statuses {
			row.Counts = append(row.Counts, s.ByStatus[st])
		}
		d.Sources = append(d.Sources, row)
		d.Dead += s.ByStatus[inbox.StatusDead]
	}
	return c.render(w, "overview", page{Title: "Overview", Nav: "overview", CSRF: sess.csrf, Data: d})
}

// lanes adds to the lanes processing recorded each configured destination
// it has no record of yet (none of its attempts failed): healthy.
func (c *console) lanes(recorded []admin.Lane) []admin.Lane {
	out := slices.Clone(recorded)
	for _, s := range c.sources {
		for _, d := range s.Destinations {
			if !slices.ContainsFunc(recorded, func(l admin.Lane) bool { return l.Source == s.Name && l.Destination == d.Name }) {
				out = append(out, admin.Lane{Source: s.Name, Destination: d.Name, State: inbox.LaneHealthy})
			}
		}
	}
	slices.SortFunc(out, func(a, b admin.Lane) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Destination, b.Destination))
	})
	return out
}

// statuses are the values the status filter takes, in the order an event
// moves through them.
var statuses = []inbox.Status{inbox.StatusReceived, inbox.StatusRetry, inbox.StatusDelivering, inbox.StatusProcessed, inbox.StatusDead}

// listData is what a list of events shows.
type listData struct {
	// Filter is the filter as the form shows it.
	Filter   listFilter
	Events   []eventview.Event
	Statuses []inbox.Status
	Outcomes []inbox.ApplyOutcome
	Sources  []string
	// Next is the URL of the next page; "" after the last.
	Next string
	// Dead reports the dead list, which offers replay of the filter.
	Dead bool
	// Tenants reports that an event of the page has a tenant: without,
	// the list has no tenant column.
	Tenants bool
}

// outcomes are the values the apply outcome filter takes.
var outcomes = []inbox.ApplyOutcome{inbox.ApplyApplied, inbox.ApplyUnchanged, inbox.ApplyStale, inbox.ApplyNone, inbox.ApplyPending, inbox.ApplyTie}

// timeField is the form of the since= and until= fields: a
// datetime-local input's value, read as UTC.
const timeField = "2006-01-02T15:04"

// listFilter is a list's filter as the query carries it.
type listFilter struct {
	Source, Tenant, Status, Outcome string
	Since, Until                    string
	Before                          int64
	// Query is a provider event id or a key (32 hex digits); a number is
	// an inbox id, whose page answers it.
	Query string
}

// readFilter reads source=, tenant=, status=, outcome=, since=, until=,
// q= and before= from the query.
func readFilter(r *http.Request) (listFilter, inbox.Filter, error) {
	q := r.URL.Query()
	lf := listFilter{Source: q.Get("source"), Tenant: q.Get("tenant"), Status: q.Get("status"), Outcome: q.Get("outcome"),
		Since: q.Get("since"), Until: q.Get("until"), Query: strings.TrimSpace(q.Get("q"))}
	f := inbox.Filter{Source: lf.Source, Tenant: lf.Tenant, Status: inbox.Status(lf.Status),
		Outcome: inbox.ApplyOutcome(lf.Outcome), Limit: PageSize}
	if lf.Status != "" && !slices.Contains(statuses, f.Status) {
		return lf, f, badRequest("status %q: want received, retry, delivering, processed or dead", lf.Status)
	}
	if lf.Outcome != "" && !slices.Contains(outcomes, f.Outcome) {
		return lf, f, badRequest("outcome %q: want applied, unchanged, stale, none, pending or tie", lf.Outcome)
	}
	for _, t := range []struct {
		name, value string
		dst         *time.Time
	}{{"since", lf.Since, &f.Since}, {"until", lf.Until, &f.Until}} {
		if t.value == "" {
			continue
		}
		at, err := time.Parse(timeField, t.value)
		if err != nil {
			return lf, f, badRequest("%s %q: want a time such as 2026-01-02T15:04 (UTC)", t.name, t.value)
		}
		*t.dst = at
	}
	if lf.Query != "" {
		if h, err := dedupe.ParseHash(lf.Query); err == nil {
			f.Hash = h
		} else {
			f.EventID = lf.Query
		}
	}
	if s := q.Get("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return lf, f, badRequest("before %q: want an event id", s)
		}
		lf.Before, f.BeforeID = n, n
	}
	return lf, f, nil
}

// nextQuery is the query of the page after the one that ended at last.
func (lf listFilter) nextQuery(last int64) string {
	q := url.Values{}
	for k, v := range map[string]string{"source": lf.Source, "tenant": lf.Tenant, "status": lf.Status, "outcome": lf.Outcome,
		"since": lf.Since, "until": lf.Until, "q": lf.Query} {
		if v != "" {
			q.Set(k, v)
		}
	}
	q.Set("before", strconv.FormatInt(last, 10))
	return q.Encode()
}

// list reads one page of the events f selects.
func (c *console) list(r *http.Request, lf listFilter, f inbox.Filter) (listData, error) {
	d := listData{Filter: lf, Statuses: statuses, Outcomes: outcomes}
	for _, s := range c.sources {
		d.Sources = append(d.Sources, s.Name)
	}
	events, err := c.store.List(r.Context(), f)
	if err != nil {
		return d, err
	}
	if d.Events, err = eventview.List(r.Context(), c.store, events); err != nil {
		return d, err
	}
	d.Tenants = slices.ContainsFunc(events, func(e inbox.Event) bool { return e.Tenant != "" })
	if len(events) == f.Limit {
		d.Next = r.URL.Path + "?" + lf.nextQuery(events[len(events)-1].ID)
	}
	return d, nil
}

func (c *console) events(w http.ResponseWriter, r *http.Request, sess *session) error {
	lf, f, err := readFilter(r)
	if err != nil {
		return err
	}
	// A number is an event's inbox id: its page answers the search.
	if id, err := strconv.ParseInt(lf.Query, 10, 64); err == nil && id > 0 {
		http.Redirect(w, r, "/ui/events/"+strconv.FormatInt(id, 10), http.StatusSeeOther)
		return nil
	}
	d, err := c.list(r, lf, f)
	if err != nil {
		return err
	}
	return c.render(w, "events", page{Title: "Events", Nav: "events", CSRF: sess.csrf, Data: d})
}

func (c *console) dead(w http.ResponseWriter, r *http.Request, sess *session) error {
	lf, f, err := readFilter(r)
	if err != nil {
		return err
	}
	lf.Status, f.Status = string(inbox.StatusDead), inbox.StatusDead
	d, err := c.list(r, lf, f)
	if err != nil {
		return err
	}
	d.Dead = true
	return c.render(w, "events", page{Title: "Dead events", Nav: "dead", CSRF: sess.csrf, Data: d})
}

// eventData is what an event's page shows.
type eventData struct {
	eventview.Detail
	// PayloadPretty is the payload, indented when it is JSON.
	PayloadPretty string
	// HeaderNames are the stored headers' names, sorted.
	HeaderNames []string
}

func (c *console) event(w http.ResponseWriter, r *http.Request, sess *session) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return badRequest("event id %q: want a positive number", r.PathValue("id"))
	}
	det, err := eventview.Load(r.Context(), c.store, id)
	if err != nil {
		return err
	}
	d := eventData{Detail: det, PayloadPretty: det.PayloadText, HeaderNames: slices.Sorted(maps.Keys(det.Headers))}
	if det.Payload != nil {
		var buf bytes.Buffer
		if json.Indent(&buf, det.Payload, "", "  ") == nil {
			d.PayloadPretty = buf.String()
		} else {
			d.PayloadPretty = string(det.Payload)
		}
	}
	return c.render(w, "event", page{Title: "Event " + strconv.FormatInt(id, 10), Nav: "events", CSRF: sess.csrf, Data: d})
}
