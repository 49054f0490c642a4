package notify

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Change is what happened to an incident.
type Change string

const (
	Opened   Change = "opened"
	Reminder Change = "reminder" // still open, repeated every alerts.repeat
	Resolved Change = "resolved"
)

// Message is one notification: the JSON body of the webhook channel, and
// what Slack and e-mail render.
type Message struct {
	// Type is the incident kind: destination.failing, events.dead, source.silent,
	// source.auth_failures, processing.lag, store.unavailable, spool.waiting,
	// spool.quarantined, reconcile.gap. A resolved destination.failing is
	// sent with Type destination.recovered.
	Type        string           `json:"type"`
	Change      Change           `json:"change"`
	Incident    string           `json:"incident"` // stable id of the incident
	Summary     string           `json:"summary"`  // one sentence in words (see Text below)
	OpenedAt    time.Time        `json:"opened_at"`
	ResolvedAt  *time.Time       `json:"resolved_at,omitempty"`
	Source      string           `json:"source,omitempty"`
	Destination string           `json:"destination,omitempty"`
	Counts      map[string]int64 `json:"counts,omitempty"`     // e.g. failed_attempts, dead, delivered_late, refused, waiting, quarantined, pending
	LastError   string           `json:"last_error,omitempty"` // already redacted by the engine (URLs stripped of credentials/query)
	ConsoleURL  string           `json:"console_url,omitempty"`
}

// errorSize bounds how much of LastError the words quote: a destination
// that answers with a page of HTML must not fill a Slack message or a
// mail.
const errorSize = 200

// Text is what every channel says about m: a subject of one line, such as
// "[hookgate] destination.failing: crm (source shop)", and a body of a
// sentence or two for an operator who has not seen the incident before.
// The body is what the engine puts in Summary. For a Type this version
// does not know, the body is m.Summary.
//
// A reminder's subject starts "still open:", a resolved one's "resolved:"
// (but for destination.recovered, which says so itself). Times are in
// UTC, durations like 2h13m or 1d4h, counts with thousands separators.
func Text(m Message) (subject, body string) {
	subject = "[hookgate] "
	switch {
	case m.Change == Reminder:
		subject += "still open: "
	case m.Change == Resolved && m.Type != "destination.recovered":
		subject += "resolved: "
	}
	subject += m.Type
	switch {
	case m.Destination != "" && m.Source != "":
		subject += ": " + m.Destination + " (source " + m.Source + ")"
	case m.Destination != "":
		subject += ": " + m.Destination
	case m.Source != "":
		subject += ": " + m.Source
	}
	w := words{m}
	if m.Change == Resolved {
		return subject, w.resolved()
	}
	return subject, w.open()
}

// words builds the sentences of one message.
type words struct{ m Message }

// open says what is wrong, for an opened incident or a reminder; the
// counts are the engine's latest.
func (w words) open() string {
	m := w.m
	switch m.Type {
	case "destination.failing", "destination.recovered":
		s := "Delivery to " + w.destination()
		if n, ok := m.Counts["failed_attempts"]; ok && n == 1 {
			s += " has failed once since " + w.since()
		} else if ok {
			s += " has failed " + thousands(n) + " times in a row since " + w.since()
		} else {
			s += " has been failing since " + w.since()
		}
		s += w.lastError() + "."
		if n, ok := m.Counts["pending"]; ok {
			s += " " + events(n) + " " + are(n) + " waiting."
		}
		return s
	case "events.dead":
		s := "Events" + w.scope() + " have been going dead since " + w.since()
		if n, ok := m.Counts["dead"]; ok {
			s = events(n) + w.scope() + " " + have(n) + " gone dead since " + w.since()
		}
		return s + w.lastError() + ". They wait in the dead list (hookgate dead list) to be replayed once the cause is fixed."
	case "source.silent":
		return "No event has arrived from source " + m.Source + " for longer than expected; found silent at " + w.since() + "."
	case "source.auth_failures":
		s := "Source " + m.Source + " has been refusing requests since " + w.since()
		if n, ok := m.Counts["refused"]; ok {
			s = "Source " + m.Source + " has refused " + count(n, "request", "requests") + " since " + w.since()
		}
		return s + " for a bad signature, timestamp or token" + w.lastError() +
			". A secret may have been rotated at the sender, or someone else is sending."
	case "processing.lag":
		s := "Processing" + w.ofSource() + " has fallen behind since " + w.since()
		var parts []string
		if n, ok := m.Counts["pending"]; ok {
			parts = append(parts, events(n)+" "+are(n)+" waiting")
		}
		if n, ok := m.Counts["lag_seconds"]; ok {
			parts = append(parts, "the oldest for "+duration(time.Duration(n)*time.Second))
		}
		if len(parts) > 0 {
			s += ": " + strings.Join(parts, ", ")
		}
		return s + "."
	case "store.unavailable":
		return "The store has been unavailable since " + w.since() + w.lastError() +
			". Senders are told to retry later (503), or their events are spooled where dedupe.on_store_error is spool."
	case "spool.waiting":
		s := "Events have been waiting in the spool since " + w.since()
		if n, ok := m.Counts["waiting"]; ok {
			s = events(n) + " " + have(n) + " been waiting in the spool since " + w.since()
		}
		return s + "; they are drained into the store once it answers."
	case "spool.quarantined":
		s := "Spooled events cannot be decoded and are quarantined"
		if n, ok := m.Counts["quarantined"]; ok {
			s = count(n, "spooled event cannot", "spooled events cannot") + " be decoded and " + are(n) + " quarantined"
		}
		return s + " (since " + w.since() + ")" + w.lastError() +
			". hookgate reconcile --spool lists each with its bytes, to recover the event from."
	case "reconcile.gap":
		if m.LastError != "" {
			return "The reconciliation of source " + m.Source + " with its provider failed (since " + w.since() + ")" + w.lastError() +
				". The next run resumes from the last page stored; hookgate reconcile --source " + m.Source + " runs one now."
		}
		s := "The reconciliation of source " + m.Source + " recovered events whose webhook never came"
		if n, ok := m.Counts["recovered"]; ok {
			s = "The reconciliation of source " + m.Source + " recovered " + events(n) + " whose webhook never came"
		}
		return s + " (since " + w.since() + "); they are processed and delivered like any other. The provider's deliveries to hookgate fail somewhere."
	}
	if m.Summary != "" {
		return m.Summary
	}
	return m.Type + " since " + w.since() + "."
}

// resolved says what ended, after how long, and what it left behind.
func (w words) resolved() string {
	m := w.m
	switch m.Type {
	case "destination.failing", "destination.recovered":
		s := w.destination() + " recovered" + w.after()
		var parts []string
		if n := m.Counts["delivered_late"]; n > 0 {
			parts = append(parts, events(n)+" delivered late")
		}
		if n := m.Counts["dead"]; n > 0 {
			parts = append(parts, thousands(n)+" dead")
		}
		if len(parts) > 0 {
			s += ": " + strings.Join(parts, ", ")
		}
		return s + "."
	case "events.dead":
		s := "Events" + w.scope() + " stopped going dead" + w.after()
		if n, ok := m.Counts["dead"]; ok {
			s += ": " + thousands(n) + " dead in all"
		}
		return s + "."
	case "source.silent":
		return "Source " + m.Source + " is receiving events again" + w.silentFor() + "."
	case "source.auth_failures":
		s := "Source " + m.Source + " stopped refusing requests" + w.after()
		if n, ok := m.Counts["refused"]; ok {
			s += ": " + thousands(n) + " refused in all"
		}
		return s + "."
	case "processing.lag":
		return "Processing" + w.ofSource() + " caught up" + w.after() + "."
	case "store.unavailable":
		return "The store is available again" + w.after() + "."
	case "spool.waiting":
		return "The spool is empty again" + w.after() + "."
	case "spool.quarantined":
		return "The spool's quarantine is empty again" + w.after() + "."
	case "reconcile.gap":
		return "The last reconciliation of source " + m.Source + " found no gap" + w.after() + "."
	}
	if m.Summary != "" {
		return m.Summary
	}
	return m.Type + " resolved" + w.after() + "."
}

func (w words) destination() string {
	if w.m.Destination == "" {
		return "the destination"
	}
	return w.m.Destination
}

// scope names where events went dead: " from shop for crm".
func (w words) scope() string {
	s := ""
	if w.m.Source != "" {
		s += " from " + w.m.Source
	}
	if w.m.Destination != "" {
		s += " for " + w.m.Destination
	}
	return s
}

func (w words) ofSource() string {
	if w.m.Source == "" {
		return ""
	}
	return " of source " + w.m.Source
}

// since is when the incident opened: its time of day for the message that
// opens it, with the date for a reminder, which may come days later.
func (w words) since() string {
	t := w.m.OpenedAt.UTC()
	if w.m.Change == Opened {
		return t.Format("15:04 UTC")
	}
	return t.Format("15:04 UTC on 2 Jan")
}

func (w words) after() string {
	if w.m.ResolvedAt == nil {
		return ""
	}
	return " after " + duration(w.m.ResolvedAt.Sub(w.m.OpenedAt))
}

// silentFor is after's wording for a silent source: it was silent for
// longer than the incident, which opened only once the silence was noticed.
func (w words) silentFor() string {
	if w.m.ResolvedAt == nil {
		return ""
	}
	return ", " + duration(w.m.ResolvedAt.Sub(w.m.OpenedAt)) + " after it was found silent"
}

// lastError is ": " and the start of LastError on one line, or nothing.
func (w words) lastError() string {
	s := strings.Join(strings.Fields(w.m.LastError), " ")
	if s == "" {
		return ""
	}
	if r := []rune(s); len(r) > errorSize {
		s = string(r[:errorSize]) + "…"
	}
	return ": " + s
}

// duration is d as an operator reads it: 42s under a minute, then 3m,
// 2h13m and 1d4h, cut (never rounded) to two units and to whole minutes,
// a zero second unit left out (2h, 2d).
func duration(d time.Duration) string {
	if d < time.Minute {
		return strconv.Itoa(int(max(d, 0)/time.Second)) + "s"
	}
	days, hours, minutes := int(d/(24*time.Hour)), int(d/time.Hour)%24, int(d/time.Minute)%60
	var big, small string
	switch {
	case days > 0:
		big, small = strconv.Itoa(days)+"d", unit(hours, "h")
	case hours > 0:
		big, small = strconv.Itoa(hours)+"h", unit(minutes, "m")
	default:
		big = strconv.Itoa(minutes) + "m"
	}
	return big + small
}

func unit(n int, u string) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n) + u
}

// thousands is n with a comma between each group of three digits: 1,204.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return sign + s
}

func count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return thousands(n) + " " + many
}

func events(n int64) string { return count(n, "event", "events") }

func are(n int64) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func have(n int64) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

// field is one labelled value of a message, as Slack's fields and the
// mail's lines show it.
type field struct{ Label, Value string }

// fields are m's source, destination and counts (in the order of their
// names), labelled in words.
func fields(m Message) []field {
	var fs []field
	if m.Source != "" {
		fs = append(fs, field{"Source", m.Source})
	}
	if m.Destination != "" {
		fs = append(fs, field{"Destination", m.Destination})
	}
	for _, k := range slices.Sorted(maps.Keys(m.Counts)) {
		if k == "lag_seconds" {
			fs = append(fs, field{"Lag", duration(time.Duration(m.Counts[k]) * time.Second)})
			continue
		}
		fs = append(fs, field{label(k), thousands(m.Counts[k])})
	}
	return fs
}

// label is a count's name in words: failed_attempts is "Failed attempts".
func label(key string) string {
	s := strings.ReplaceAll(key, "_", " ")
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// stamp is a full time in UTC, for the lines below the words.
func stamp(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// when is the line that dates m: when it opened, and when it resolved.
func when(m Message) string {
	s := "Opened " + stamp(m.OpenedAt)
	if m.ResolvedAt != nil {
		s += ", resolved " + stamp(*m.ResolvedAt)
	}
	return s
}
