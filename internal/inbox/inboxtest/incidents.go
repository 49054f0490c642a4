package inboxtest

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// incidents is the bundle's store as inbox.Incidents. A backend without
// incidents skips the case, visibly.
func (b *bundle) incidents() inbox.Incidents {
	b.t.Helper()
	return incidentsOf(b.t, b.store)
}

// incidentsOf is s as inbox.Incidents, or skips t.
func incidentsOf(t *testing.T, s inbox.Store) inbox.Incidents {
	t.Helper()
	inc, ok := s.(inbox.Incidents)
	if !ok {
		t.Skipf("%T keeps no incidents (inbox.Incidents)", s)
	}
	return inc
}

// failing is the incident of lane shop -> destination failing, seen at.
func failing(destination string, at time.Time, counts map[string]int64) inbox.Incident {
	return inbox.Incident{Kind: "destination_failing", Source: "shop", Destination: destination,
		SeenAt: at, Counts: counts, LastError: "HTTP 503"}
}

// notifier builds the notices of one change, one per channel, and records
// the incidents it was called with. It is safe for concurrent use.
type notifier struct {
	change   string
	channels []string

	mu   sync.Mutex
	seen []inbox.Incident
}

func notify(change string, channels ...string) *notifier {
	return &notifier{change: change, channels: channels}
}

// fn is the NoticeFunc the store is given.
func (n *notifier) fn(inc inbox.Incident) []inbox.Notice {
	n.mu.Lock()
	n.seen = append(n.seen, inc)
	n.mu.Unlock()
	out := make([]inbox.Notice, len(n.channels))
	for i, ch := range n.channels {
		out[i] = inbox.Notice{Change: n.change, Channel: ch, Body: body(n.change, inc)}
	}
	return out
}

// calls returns the incidents fn was called with.
func (n *notifier) calls() []inbox.Incident {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.seen)
}

// body is the message of change of inc: it names the incident's id, so a
// notice shows that the store gave the id before building it.
func body(change string, inc inbox.Incident) []byte {
	return fmt.Appendf(nil, "%s %s %s->%s #%d", change, inc.Kind, inc.Source, inc.Destination, inc.ID)
}

// observe observes inc and fails the test on error.
func (b *bundle) observe(inc inbox.Incident, n *notifier) (inbox.Incident, bool) {
	b.t.Helper()
	got, opened, err := b.incidents().Observe(b.ctx, inc, n.fn)
	if err != nil {
		b.t.Fatalf("Observe(%s %s->%s): %v", inc.Kind, inc.Source, inc.Destination, err)
	}
	return got, opened
}

// open observes inc, which must open a new incident, and returns it.
func (b *bundle) open(inc inbox.Incident, n *notifier) inbox.Incident {
	b.t.Helper()
	got, opened := b.observe(inc, n)
	if !opened || got.ID == 0 {
		b.t.Fatalf("Observe(%s->%s) = id %d, opened %v; want a new incident", inc.Source, inc.Destination, got.ID, opened)
	}
	return got
}

// resolve resolves incident id and reports whether it ended it.
func (b *bundle) resolve(id int64, at time.Time, counts map[string]int64, n *notifier) bool {
	b.t.Helper()
	ok, err := b.incidents().Resolve(b.ctx, id, at, counts, n.fn)
	if err != nil {
		b.t.Fatalf("Resolve(%d): %v", id, err)
	}
	return ok
}

// remind reminds of incident id and reports whether it queued a reminder.
func (b *bundle) remind(id int64, due, at time.Time, n *notifier) bool {
	b.t.Helper()
	ok, err := b.incidents().Remind(b.ctx, id, due, at, n.fn)
	if err != nil {
		b.t.Fatalf("Remind(%d): %v", id, err)
	}
	return ok
}

// listIncidents lists the incidents.
func (b *bundle) listIncidents(all bool, limit int) []inbox.Incident {
	b.t.Helper()
	got, err := b.incidents().ListIncidents(b.ctx, all, limit)
	if err != nil {
		b.t.Fatalf("ListIncidents(%v, %d): %v", all, limit, err)
	}
	if len(got) > max(limit, 0) {
		b.t.Fatalf("ListIncidents(%v, %d) returned %d", all, limit, len(got))
	}
	return got
}

// notices returns the notices of incident id.
func (b *bundle) notices(id int64) []inbox.Notice {
	b.t.Helper()
	got, err := b.incidents().Notices(b.ctx, id)
	if err != nil {
		b.t.Fatalf("Notices(%d): %v", id, err)
	}
	return got
}

// leaseNotices leases up to n notices due at now for owner for the
// suite's lease.
func (b *bundle) leaseNotices(owner string, n int, now time.Time) []inbox.Notice {
	b.t.Helper()
	got, err := b.incidents().LeaseNotices(b.ctx, owner, n, now, lease)
	if err != nil {
		b.t.Fatalf("LeaseNotices(%s): %v", owner, err)
	}
	if len(got) > max(n, 0) {
		b.t.Fatalf("LeaseNotices of %d returned %d", n, len(got))
	}
	return got
}

// finishNotice finishes notice id as owner and fails the test on error.
func (b *bundle) finishNotice(owner string, id int64, sent bool, errText string, retry time.Time) {
	b.t.Helper()
	if err := b.incidents().FinishNotice(b.ctx, owner, id, sent, errText, retry); err != nil {
		b.t.Fatalf("FinishNotice(%s, %d): %v", owner, id, err)
	}
}

// notice returns notice id of incident inc.
func (b *bundle) notice(inc, id int64) inbox.Notice {
	b.t.Helper()
	for _, n := range b.notices(inc) {
		if n.ID == id {
			return n
		}
	}
	b.t.Fatalf("incident %d has no notice %d", inc, id)
	return inbox.Notice{}
}

// incidentDiff describes how got differs from want, or is empty.
func incidentDiff(got, want inbox.Incident) string {
	var d []string
	check := func(what string, same bool, g, w any) {
		if !same {
			d = append(d, fmt.Sprintf("%s %v, want %v", what, g, w))
		}
	}
	check("id", got.ID == want.ID, got.ID, want.ID)
	check("key", got.Kind == want.Kind && got.Source == want.Source && got.Destination == want.Destination,
		[]string{got.Kind, got.Source, got.Destination}, []string{want.Kind, want.Source, want.Destination})
	check("opened at", got.OpenedAt.Equal(want.OpenedAt), got.OpenedAt, want.OpenedAt)
	check("resolved at", got.ResolvedAt.Equal(want.ResolvedAt), got.ResolvedAt, want.ResolvedAt)
	check("seen at", got.SeenAt.Equal(want.SeenAt), got.SeenAt, want.SeenAt)
	check("reminded at", got.RemindedAt.Equal(want.RemindedAt), got.RemindedAt, want.RemindedAt)
	check("counts", maps.Equal(got.Counts, want.Counts), got.Counts, want.Counts)
	check("last error", got.LastError == want.LastError, got.LastError, want.LastError)
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprint(d)
}

// sameIncident fails unless got is want.
func (b *bundle) sameIncident(what string, got, want inbox.Incident) {
	b.t.Helper()
	if d := incidentDiff(got, want); d != "" {
		b.t.Errorf("%s: %s", what, d)
	}
}

// incidentIDs returns the incidents' ids in their order.
func incidentIDs(incs []inbox.Incident) []int64 {
	ids := make([]int64, len(incs))
	for i, inc := range incs {
		ids[i] = inc.ID
	}
	return ids
}

// noticeIDs returns the notices' ids in their order.
func noticeIDs(ns []inbox.Notice) []int64 {
	ids := make([]int64, len(ns))
	for i, n := range ns {
		ids[i] = n.ID
	}
	return ids
}

// changes returns each notice's change and channel, in order.
func changes(ns []inbox.Notice) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Change + ":" + n.Channel
	}
	return out
}

// testIncidentObserve: the first observation of a key opens an incident
// and queues its notices, built with its id; the next ones update what
// was seen and queue nothing; another key is another incident.
func testIncidentObserve(b *bundle) {
	t0 := b.clock.Now()
	opened := notify("opened", "ops", "pager")
	inc := b.open(failing("app", t0, map[string]int64{"failed": 3}), opened)
	want := failing("app", t0, map[string]int64{"failed": 3})
	want.ID, want.OpenedAt = inc.ID, t0
	b.sameIncident("opened incident", inc, want)
	if calls := opened.calls(); len(calls) != 1 {
		b.t.Fatalf("notices built %d times on opening, want once", len(calls))
	} else {
		b.sameIncident("incident the notices were built from", calls[0], want)
	}
	ns := b.notices(inc.ID)
	if got := changes(ns); !slices.Equal(got, []string{"opened:ops", "opened:pager"}) {
		b.t.Fatalf("notices %v, want opened to ops and pager, oldest first", got)
	}
	for _, n := range ns {
		if n.ID == 0 || n.IncidentID != inc.ID || n.Status != inbox.NoticePending || n.Attempts != 0 ||
			n.Error != "" || !n.At.IsZero() || string(n.Body) != string(body("opened", inc)) {
			b.t.Errorf("queued notice %+v: want a pending notice of incident %d, body %q", n, inc.ID, body("opened", inc))
		}
	}

	b.clock.Advance(time.Minute)
	t1 := b.clock.Now()
	again := failing("app", t1, map[string]int64{"failed": 7, "dead": 1})
	again.LastError = "timeout"
	got, isNew := b.observe(again, opened)
	if isNew {
		b.t.Fatalf("second observation opened incident %d; %d is open", got.ID, inc.ID)
	}
	want.SeenAt, want.Counts, want.LastError = t1, again.Counts, "timeout"
	b.sameIncident("incident observed again", got, want)
	if calls := opened.calls(); len(calls) != 1 {
		b.t.Errorf("notices built %d times; an update queues none", len(calls))
	}
	if got := b.notices(inc.ID); !slices.Equal(noticeIDs(got), noticeIDs(ns)) {
		b.t.Errorf("notices after an update %v, want %v only", changes(got), changes(ns))
	}

	other := b.open(failing("audit", t1, nil), notify("opened", "ops"))
	if other.ID == inc.ID {
		b.t.Fatalf("another destination got incident %d too", inc.ID)
	}
	list := b.listIncidents(false, 10)
	if !slices.Equal(incidentIDs(list), []int64{other.ID, inc.ID}) {
		b.t.Fatalf("open incidents %v, want %v newest first", incidentIDs(list), []int64{other.ID, inc.ID})
	}
	b.sameIncident("listed incident", list[1], want)
	if len(list[0].Counts) != 0 {
		b.t.Errorf("incident observed without counts lists counts %v", list[0].Counts)
	}

	quiet, isNew, err := b.incidents().Observe(b.ctx, failing("billing", t1, nil), nil)
	if err != nil || !isNew {
		b.t.Fatalf("Observe without notices: opened %v, %v; want a new incident", isNew, err)
	}
	if ok, err := b.incidents().Resolve(b.ctx, quiet.ID, t1, nil, nil); err != nil || !ok {
		b.t.Fatalf("Resolve without notices: %v, %v; want it resolved", ok, err)
	}
	if got := b.notices(quiet.ID); len(got) != 0 {
		b.t.Errorf("a nil NoticeFunc queued %v", changes(got))
	}

	for _, bad := range []inbox.Incident{{Source: "shop", SeenAt: t1}, {Kind: "source_silent", Source: "shop"}} {
		if _, _, err := b.incidents().Observe(b.ctx, bad, opened.fn); !errors.Is(err, inbox.ErrBadIncident) {
			b.t.Errorf("Observe(%+v): %v, want ErrBadIncident", bad, err)
		}
	}
}

// testIncidentSee: seeing an open incident by its id updates it and
// queues nothing; seeing one that has ended changes nothing and opens no
// new incident of its key.
func testIncidentSee(b *bundle) {
	t0 := b.clock.Now()
	opened := notify("opened", "ops")
	inc := b.open(failing("app", t0, map[string]int64{"failed": 3}), opened)
	b.clock.Advance(time.Minute)
	t1 := b.clock.Now()
	seen := failing("app", t1, map[string]int64{"failed": 7})
	seen.ID, seen.LastError = inc.ID, "HTTP 502"
	if ok, err := b.incidents().See(b.ctx, seen); err != nil || !ok {
		b.t.Fatalf("See of open incident %d: %v, %v; want true", inc.ID, ok, err)
	}
	want := inc
	want.SeenAt, want.Counts, want.LastError = t1, map[string]int64{"failed": 7}, "HTTP 502"
	b.sameIncident("incident seen", b.listIncidents(false, 10)[0], want)

	if !b.resolve(inc.ID, t1, nil, notify("resolved", "ops")) {
		b.t.Fatalf("Resolve of open incident %d: false", inc.ID)
	}
	b.clock.Advance(time.Minute)
	seen.SeenAt = b.clock.Now()
	if ok, err := b.incidents().See(b.ctx, seen); err != nil || ok {
		b.t.Errorf("See of ended incident %d: %v, %v; want false", inc.ID, ok, err)
	}
	if got := b.listIncidents(false, 10); len(got) != 0 {
		b.t.Errorf("open incidents %v after seeing an ended one, want none", incidentIDs(got))
	}
	want.ResolvedAt = t1
	b.sameIncident("ended incident seen", b.listIncidents(true, 10)[0], want)
	if got := changes(b.notices(inc.ID)); !slices.Equal(got, []string{"opened:ops", "resolved:ops"}) {
		b.t.Errorf("notices %v, want the opening and the ending only", got)
	}
	for _, bad := range []inbox.Incident{{ID: inc.ID, Source: "shop", SeenAt: t1}, {ID: inc.ID, Kind: "source_silent"}} {
		if _, err := b.incidents().See(b.ctx, bad); !errors.Is(err, inbox.ErrBadIncident) {
			b.t.Errorf("See(%+v): %v, want ErrBadIncident", bad, err)
		}
	}
}

// testIncidentResolve: an incident is resolved once, with its counts
// merged over the stored ones and its notices queued; resolving it again
// changes and queues nothing, and the key's next observation opens a new
// incident.
func testIncidentResolve(b *bundle) {
	t0 := b.clock.Now()
	inc := b.open(failing("app", t0, map[string]int64{"failed": 3, "dead": 1}), notify("opened", "ops"))
	b.clock.Advance(time.Minute)
	t1 := b.clock.Now()
	resolved := notify("resolved", "ops")
	if !b.resolve(inc.ID, t1, map[string]int64{"failed": 5, "refused": 2}, resolved) {
		b.t.Fatalf("Resolve of open incident %d: false", inc.ID)
	}
	want := inc
	want.ResolvedAt, want.Counts = t1, map[string]int64{"failed": 5, "dead": 1, "refused": 2}
	if calls := resolved.calls(); len(calls) != 1 {
		b.t.Fatalf("notices built %d times on resolving, want once", len(calls))
	} else {
		b.sameIncident("incident the notices were built from", calls[0], want)
	}
	if got := changes(b.notices(inc.ID)); !slices.Equal(got, []string{"opened:ops", "resolved:ops"}) {
		b.t.Fatalf("notices %v, want opened then resolved", got)
	}
	if got := b.listIncidents(false, 10); len(got) != 0 {
		b.t.Errorf("open incidents %v after resolving the only one", incidentIDs(got))
	}
	if got := b.listIncidents(true, 10); len(got) != 1 {
		b.t.Fatalf("all incidents %v, want %d", incidentIDs(got), inc.ID)
	} else {
		b.sameIncident("resolved incident", got[0], want)
		if got[0].Open() {
			b.t.Errorf("resolved incident %d is open", inc.ID)
		}
	}

	b.clock.Advance(time.Minute)
	t2 := b.clock.Now()
	if b.resolve(inc.ID, t2, map[string]int64{"failed": 9}, resolved) {
		b.t.Errorf("second Resolve of incident %d: true", inc.ID)
	}
	if b.resolve(inc.ID+1000, t2, nil, resolved) {
		b.t.Errorf("Resolve of unknown incident %d: true", inc.ID+1000)
	}
	if calls := resolved.calls(); len(calls) != 1 {
		b.t.Errorf("notices built %d times; a resolved incident queues none", len(calls))
	}
	if got := changes(b.notices(inc.ID)); len(got) != 2 {
		b.t.Errorf("notices %v after resolving again, want opened and resolved only", got)
	}
	b.sameIncident("incident resolved twice", b.listIncidents(true, 10)[0], want)
	if b.remind(inc.ID, t2.Add(time.Hour), t2, notify("reminder", "ops")) {
		b.t.Errorf("Remind of resolved incident %d: true", inc.ID)
	}
	if _, err := b.incidents().Resolve(b.ctx, inc.ID, time.Time{}, nil, resolved.fn); !errors.Is(err, inbox.ErrBadIncident) {
		b.t.Errorf("Resolve at the zero time: %v, want ErrBadIncident", err)
	}

	reopened := notify("opened", "ops")
	next := b.open(failing("app", t2, nil), reopened)
	if next.ID == inc.ID || !next.OpenedAt.Equal(t2) {
		b.t.Errorf("key observed after resolving: incident %d opened at %v, want a new one opened at %v", next.ID, next.OpenedAt, t2)
	}
	if got := changes(b.notices(next.ID)); !slices.Equal(got, []string{"opened:ops"}) {
		b.t.Errorf("notices of the new incident %v, want its opening", got)
	}
}

// testIncidentRemind: a reminder is queued when the last one (or the
// opening, before any) is before due, and then only.
func testIncidentRemind(b *bundle) {
	t0 := b.clock.Now()
	inc := b.open(failing("app", t0, nil), notify("opened", "ops"))
	reminder := notify("reminder", "ops")
	b.clock.Advance(30 * time.Minute)
	if b.remind(inc.ID, b.clock.Now().Add(-time.Hour), b.clock.Now(), reminder) {
		b.t.Fatalf("Remind due an hour after an opening 30m ago: true")
	}
	if b.remind(inc.ID, t0, b.clock.Now(), reminder) {
		b.t.Fatalf("Remind due at the opening itself: true, want only an opening before due")
	}

	b.clock.Advance(90 * time.Minute)
	t1 := b.clock.Now()
	if !b.remind(inc.ID, t1.Add(-time.Hour), t1, reminder) {
		b.t.Fatalf("Remind due an hour after an opening 2h ago: false")
	}
	want := inc
	want.RemindedAt = t1
	if calls := reminder.calls(); len(calls) != 1 {
		b.t.Fatalf("notices built %d times on reminding, want once", len(calls))
	} else {
		b.sameIncident("incident the reminder was built from", calls[0], want)
	}
	if b.remind(inc.ID, t1.Add(-time.Hour), t1, reminder) {
		b.t.Errorf("the same Remind again: true")
	}
	b.clock.Advance(30 * time.Minute)
	if b.remind(inc.ID, b.clock.Now().Add(-time.Hour), b.clock.Now(), reminder) {
		b.t.Errorf("Remind 30m after the last reminder, due an hour after it: true")
	}
	if b.remind(inc.ID, t1, b.clock.Now(), reminder) {
		b.t.Errorf("Remind due at the last reminder itself: true")
	}
	b.sameIncident("incident reminded once", b.listIncidents(false, 10)[0], want)

	b.clock.Advance(31 * time.Minute)
	t2 := b.clock.Now()
	if !b.remind(inc.ID, t2.Add(-time.Hour), t2, reminder) {
		b.t.Fatalf("Remind an hour and a minute after the last reminder: false")
	}
	want.RemindedAt = t2
	b.sameIncident("incident reminded twice", b.listIncidents(false, 10)[0], want)
	if got := changes(b.notices(inc.ID)); !slices.Equal(got, []string{"opened:ops", "reminder:ops", "reminder:ops"}) {
		b.t.Errorf("notices %v, want the opening and two reminders", got)
	}
	if b.remind(inc.ID+1000, t2, t2, reminder) {
		b.t.Errorf("Remind of unknown incident %d: true", inc.ID+1000)
	}
	if len(reminder.calls()) != 2 {
		b.t.Errorf("reminders built %d times, want twice", len(reminder.calls()))
	}
}

// testIncidentList: the open incidents come first, newest first, then
// with all the ended ones, newest first, up to the limit.
func testIncidentList(b *bundle) {
	var ids []int64
	for _, d := range []string{"a", "b", "c", "d"} {
		ids = append(ids, b.open(failing(d, b.clock.Now(), nil), notify("opened", "ops")).ID)
		b.clock.Advance(time.Second)
	}
	for _, id := range []int64{ids[0], ids[2]} {
		if !b.resolve(id, b.clock.Now(), nil, notify("resolved", "ops")) {
			b.t.Fatalf("Resolve(%d): false", id)
		}
		b.clock.Advance(time.Second)
	}
	for _, c := range []struct {
		all   bool
		limit int
		want  []int64
	}{
		{false, 10, []int64{ids[3], ids[1]}},
		{true, 10, []int64{ids[3], ids[1], ids[2], ids[0]}},
		{true, 3, []int64{ids[3], ids[1], ids[2]}},
		{false, 1, []int64{ids[3]}},
		{true, 1, []int64{ids[3]}},
		{true, 0, []int64{}},
	} {
		if got := incidentIDs(b.listIncidents(c.all, c.limit)); !slices.Equal(got, c.want) {
			b.t.Errorf("ListIncidents(%v, %d) = %v, want %v", c.all, c.limit, got, c.want)
		}
	}
}

// testNoticeLease: pending notices are leased oldest first, each to one
// owner until its lease expires, a retried one not before it is due, a
// sent or given-up one never again.
func testNoticeLease(b *bundle) {
	now := b.clock.Now()
	inc := b.open(failing("app", now, nil), notify("opened", "a", "b", "c"))
	all := b.notices(inc.ID)
	ids := noticeIDs(all)

	first := b.leaseNotices("w1", 2, now)
	if !slices.Equal(noticeIDs(first), ids[:2]) {
		b.t.Fatalf("first lease %v, want %v", noticeIDs(first), ids[:2])
	}
	for i, n := range first {
		if n.IncidentID != inc.ID || n.Channel != all[i].Channel || n.Change != "opened" ||
			string(n.Body) != string(all[i].Body) || n.Status != inbox.NoticePending || n.Attempts != 0 {
			b.t.Errorf("leased notice %+v, want %+v", n, all[i])
		}
	}
	if got := noticeIDs(b.leaseNotices("w2", 10, now)); !slices.Equal(got, ids[2:]) {
		b.t.Fatalf("second lease %v, want %v", got, ids[2:])
	}
	if got := b.leaseNotices("w2", 10, now.Add(lease-time.Second)); len(got) != 0 {
		b.t.Fatalf("lease before the leases end %v, want none", noticeIDs(got))
	}
	if got := b.leaseNotices("w2", 0, now); len(got) != 0 {
		b.t.Fatalf("lease of 0 returned %v", noticeIDs(got))
	}

	t1 := now.Add(lease + time.Second)
	if got := noticeIDs(b.leaseNotices("w3", 10, t1)); !slices.Equal(got, ids) {
		b.t.Fatalf("lease after the leases expired %v, want all %v again", got, ids)
	}
	b.finishNotice("w3", ids[0], true, "", time.Time{})
	b.finishNotice("w3", ids[1], false, "HTTP 500", t1.Add(time.Hour))
	b.finishNotice("w3", ids[2], false, "HTTP 400", time.Time{})

	if got := b.leaseNotices("w4", 10, t1.Add(30*time.Minute)); len(got) != 0 {
		b.t.Fatalf("lease before the retry is due %v, want none (one sent, one due later, one given up)", noticeIDs(got))
	}
	due := b.leaseNotices("w4", 10, t1.Add(time.Hour+time.Second))
	if !slices.Equal(noticeIDs(due), ids[1:2]) {
		b.t.Fatalf("lease once the retry is due %v, want %v", noticeIDs(due), ids[1:2])
	}
	if n := due[0]; n.Attempts != 1 || n.Error != "HTTP 500" || n.Status != inbox.NoticePending {
		b.t.Errorf("retried notice %+v: want pending after 1 attempt that failed with HTTP 500", n)
	}
	if got := noticeIDs(b.leaseNotices("w5", 10, t1.Add(10*time.Hour))); !slices.Equal(got, ids[1:2]) {
		b.t.Errorf("lease long after %v, want only the pending %v", got, ids[1:2])
	}
	if _, err := b.incidents().LeaseNotices(b.ctx, "", 10, t1, lease); !errors.Is(err, inbox.ErrNoOwner) {
		b.t.Errorf("LeaseNotices with no owner: %v, want ErrNoOwner", err)
	}
}

// testNoticeFinish: a send ends sent, pending again with a retry time, or
// failed; only the owner of the lease can end it.
func testNoticeFinish(b *bundle) {
	now := b.clock.Now()
	inc := b.open(failing("app", now, nil), notify("opened", "a", "b", "c"))
	ids := noticeIDs(b.notices(inc.ID))
	b.leaseNotices("w1", 10, now)
	b.clock.Advance(time.Second)
	at := b.clock.Now()

	b.finishNotice("w1", ids[0], true, "", time.Time{})
	if n := b.notice(inc.ID, ids[0]); n.Status != inbox.NoticeSent || n.Attempts != 1 || n.Error != "" || !n.At.Equal(at) {
		b.t.Errorf("sent notice %+v: want sent at %v after 1 attempt", n, at)
	}
	retry := now.Add(time.Minute)
	b.finishNotice("w1", ids[1], false, "HTTP 500", retry)
	if n := b.notice(inc.ID, ids[1]); n.Status != inbox.NoticePending || n.Attempts != 1 || n.Error != "HTTP 500" || !n.At.IsZero() {
		b.t.Errorf("retried notice %+v: want pending after 1 attempt, error HTTP 500", n)
	}
	b.finishNotice("w1", ids[2], false, "HTTP 400", time.Time{})
	if n := b.notice(inc.ID, ids[2]); n.Status != inbox.NoticeFailed || n.Attempts != 1 || n.Error != "HTTP 400" || !n.At.Equal(at) {
		b.t.Errorf("given-up notice %+v: want failed at %v after 1 attempt, error HTTP 400", n, at)
	}
	if err := b.incidents().FinishNotice(b.ctx, "w1", ids[0], true, "", time.Time{}); !errors.Is(err, inbox.ErrNotOwner) {
		b.t.Errorf("second FinishNotice of a sent notice: %v, want ErrNotOwner", err)
	}

	// w2 leases the retried notice; its lease expires and w3 takes it.
	if got := noticeIDs(b.leaseNotices("w2", 10, retry.Add(time.Second))); !slices.Equal(got, ids[1:2]) {
		b.t.Fatalf("w2 leased %v, want %v", got, ids[1:2])
	}
	if got := noticeIDs(b.leaseNotices("w3", 10, retry.Add(lease+2*time.Second))); !slices.Equal(got, ids[1:2]) {
		b.t.Fatalf("w3 leased %v after w2's lease expired, want %v", got, ids[1:2])
	}
	if err := b.incidents().FinishNotice(b.ctx, "w2", ids[1], true, "", time.Time{}); !errors.Is(err, inbox.ErrNotOwner) {
		b.t.Errorf("FinishNotice by w2, whose lease w3 took: %v, want ErrNotOwner", err)
	}
	if n := b.notice(inc.ID, ids[1]); n.Status != inbox.NoticePending || n.Attempts != 1 {
		b.t.Errorf("notice %+v after a finish by a former owner: want unchanged", n)
	}
	b.clock.Advance(time.Minute)
	b.finishNotice("w3", ids[1], true, "", time.Time{})
	if n := b.notice(inc.ID, ids[1]); n.Status != inbox.NoticeSent || n.Attempts != 2 || n.Error != "HTTP 500" || !n.At.Equal(b.clock.Now()) {
		b.t.Errorf("notice sent at the second attempt %+v: want sent at %v after 2 attempts, keeping the failed one's error",
			n, b.clock.Now())
	}

	if err := b.incidents().FinishNotice(b.ctx, "w1", ids[2]+1000, true, "", time.Time{}); !errors.Is(err, inbox.ErrNotOwner) {
		b.t.Errorf("FinishNotice of an unknown notice: %v, want ErrNotOwner", err)
	}
	if err := b.incidents().FinishNotice(b.ctx, "", ids[1], true, "", time.Time{}); !errors.Is(err, inbox.ErrNoOwner) {
		b.t.Errorf("FinishNotice with no owner: %v, want ErrNoOwner", err)
	}
}

// incidentNodes is how many stores the incident races open on one
// database.
const incidentNodes = 6

// incidentStores opens stores on n's database until there are
// incidentNodes, and returns them all as inbox.Incidents.
func (n *nodes) incidentStores() []inbox.Incidents {
	n.t.Helper()
	for len(n.stores) < incidentNodes {
		n.stores = append(n.stores, n.open())
	}
	out := make([]inbox.Incidents, len(n.stores))
	for i, s := range n.stores {
		out[i] = incidentsOf(n.t, s)
	}
	return out
}

// race runs fn on every store at once, each on a goroutine of its own
// released together, and waits for them.
func race(stores []inbox.Incidents, fn func(i int, s inbox.Incidents)) {
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for i, s := range stores {
		wg.Go(func() {
			<-ready
			fn(i, s)
		})
	}
	close(ready)
	wg.Wait()
}

// testNodesIncidentRace: stores on one database observe one key at once,
// a few times each: exactly one opens the incident and its notices are
// queued once. Then they all resolve it at once: exactly one ends it.
// Then they observe it again: exactly one opens the next incident.
func testNodesIncidentRace(n *nodes) {
	const rounds = 3
	stores := n.incidentStores()
	ctx := n.t.Context()
	observeAll := func(what string, note *notifier) int64 {
		var (
			mu     sync.Mutex
			opened int
			ids    = map[int64]int{}
		)
		race(stores, func(i int, s inbox.Incidents) {
			for r := range rounds {
				inc, isNew, err := s.Observe(ctx, failing("app", n.clock.Now(), map[string]int64{"failed": int64(r)}), note.fn)
				if err != nil {
					n.t.Errorf("%s: store %d: Observe: %v", what, i, err)
					return
				}
				mu.Lock()
				ids[inc.ID]++
				if isNew {
					opened++
				}
				mu.Unlock()
			}
		})
		if opened != 1 || len(ids) != 1 {
			n.t.Fatalf("%s: %d of %d observations opened an incident, incidents %v; want exactly one opened, one incident",
				what, opened, len(stores)*rounds, ids)
		}
		if calls := note.calls(); len(calls) != 1 {
			n.t.Errorf("%s: notices built %d times, want once", what, len(calls))
		}
		for id := range ids {
			return id
		}
		return 0
	}
	b := n.bundles[1]

	first := observeAll("first opening", notify("opened", "ops", "pager"))
	if got := changes(b.notices(first)); !slices.Equal(got, []string{"opened:ops", "opened:pager"}) {
		n.t.Fatalf("notices of the raced incident %v, want one opening to ops and pager", got)
	}

	n.clock.Advance(time.Minute)
	resolved := notify("resolved", "ops")
	var (
		mu    sync.Mutex
		ended int
	)
	race(stores, func(i int, s inbox.Incidents) {
		ok, err := s.Resolve(ctx, first, n.clock.Now(), nil, resolved.fn)
		if err != nil {
			n.t.Errorf("store %d: Resolve: %v", i, err)
			return
		}
		if ok {
			mu.Lock()
			ended++
			mu.Unlock()
		}
	})
	if ended != 1 || len(resolved.calls()) != 1 {
		n.t.Fatalf("%d stores resolved incident %d, notices built %d times; want exactly one", ended, first, len(resolved.calls()))
	}
	if got := changes(b.notices(first)); !slices.Equal(got, []string{"opened:ops", "opened:pager", "resolved:ops"}) {
		n.t.Errorf("notices after resolving at once %v, want one opening and one resolution", got)
	}

	n.clock.Advance(time.Minute)
	second := observeAll("second opening", notify("opened", "ops", "pager"))
	if second == first {
		n.t.Fatalf("observing the resolved key reused incident %d", first)
	}
	if got := b.leaseNotices("sender", 100, n.clock.Now()); len(got) != 5 {
		n.t.Errorf("%d notices pending across both incidents (%v), want 5", len(got), changes(got))
	}
	if got := incidentIDs(b.listIncidents(true, 10)); !slices.Equal(got, []int64{second, first}) {
		n.t.Errorf("incidents %v, want %v", got, []int64{second, first})
	}
}

// testNodesIncidentRestart: an open incident outlives the store that
// opened it: a store opened afterwards on the database lists it, and its
// next observation updates it instead of opening another.
func testNodesIncidentRestart(n *nodes) {
	b := n.bundles[0]
	t0 := n.clock.Now()
	inc := b.open(failing("app", t0, map[string]int64{"failed": 1}), notify("opened", "ops"))
	if c, ok := n.stores[0].(io.Closer); ok {
		if err := c.Close(); err != nil {
			n.t.Fatalf("Close: %v", err)
		}
	}
	restarted := &bundle{t: n.t, ctx: n.t.Context(), store: n.open(), clock: n.clock}
	list := restarted.listIncidents(false, 10)
	if len(list) != 1 {
		n.t.Fatalf("after a restart the open incidents are %v, want %d", incidentIDs(list), inc.ID)
	}
	restarted.sameIncident("incident after a restart", list[0], inc)

	n.clock.Advance(time.Minute)
	got, isNew := restarted.observe(failing("app", n.clock.Now(), map[string]int64{"failed": 2}), notify("opened", "ops"))
	if isNew || got.ID != inc.ID {
		n.t.Errorf("observation after a restart: incident %d, opened %v; want %d updated", got.ID, isNew, inc.ID)
	}
	if got := changes(restarted.notices(inc.ID)); !slices.Equal(got, []string{"opened:ops"}) {
		n.t.Errorf("notices after a restart %v, want the one opening", got)
	}
}
