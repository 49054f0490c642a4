package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/inboxtest"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

// open opens a store on a fresh file that reads time from now.
func open(t *testing.T, clock *inboxtest.Clock) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestInbox(t *testing.T) {
	t.Parallel()
	inboxtest.Exercise(t, func(t *testing.T, clock *inboxtest.Clock) inbox.Store {
		return open(t, clock)
	})
}

// testItem returns an event of source shop named key, with a one-hour
// window.
func testItem(key string) inbox.Item {
	k := dedupe.Key{Tenant: "acme", Provider: "shop", ObjectType: "event", Action: "any", EventID: key}
	return inbox.Item{Event: inbox.Event{
		Hash: k.Hash(), Scope: k.Scope(), Source: "shop", Provider: "standard", Tenant: "acme",
		EventID: key, Payload: []byte(`{}`),
	}, Window: time.Hour}
}

// fill accepts n events in one batch and returns their ids.
func fill(t *testing.T, s *sqlite.Store, n int) []int64 {
	t.Helper()
	items := make([]inbox.Item, n)
	for i := range items {
		items[i] = testItem(strconv.Itoa(i))
	}
	out, err := s.Accept(t.Context(), items)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, n)
	for i, o := range out {
		ids[i] = o.ID
	}
	return ids
}

// indexNames returns the names of the indexes on table.
func indexNames(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query("SELECT name FROM pragma_index_list(?) ORDER BY name", table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	return names
}

// TestMigrateFirstRelease opens a file written by the intake-only release:
// its event gets the processing columns with their defaults, becomes due,
// and the unused hash index is gone. Opening it again changes nothing.
func TestMigrateFirstRelease(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v1, err := os.ReadFile("testdata/schema-v1.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(string(v1)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := sqlite.New(db, sqlite.Options{}); err != nil {
			t.Fatalf("New on a first-release file: %v", err)
		}
	}
	s, err := sqlite.New(db, sqlite.Options{Now: func() time.Time { return time.Unix(1800000000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Get(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if e.EventID != "evt_1" || e.Status != inbox.StatusReceived || e.Attempts != 0 || e.Applied != nil ||
		!e.NextAttemptAt.IsZero() || e.ReceivedAt.Unix() != 1700000000 {
		t.Errorf("migrated event: %+v", e)
	}
	checkCounts(t, s, "after migration")
	evs, err := s.Lease(t.Context(), "w", 10, time.Minute)
	if err != nil || len(evs) != 1 || evs[0].Attempts != 1 {
		t.Fatalf("lease on a migrated file: %v, %v; want the old event with attempts 1", evs, err)
	}
	applied, err := s.Apply(t.Context(), evs)
	if err != nil || applied[0] != (inbox.Applied{Outcome: inbox.ApplyApplied, To: "paid", Transition: true}) {
		t.Errorf("apply on a migrated file: %+v, %v", applied, err)
	}
	want := []string{"events_dead", "events_due", "events_outcome", "events_processed", "events_received", "events_source",
		"events_status", "events_tenant"}
	if got := indexNames(t, db.DB, "events"); !slices.Equal(got, want) {
		t.Errorf("indexes on events: %v, want %v", got, want)
	}
}

// TestMigrateDeliveries opens a file written before deliveries were
// scheduled per destination. The delivered record and the dead event's
// are kept; the retrying event's failed record, whose "failed" meant "the
// last attempt failed", is dropped, so that the event, processed again,
// starts its delivery over instead of being taken as failed for good.
func TestMigrateDeliveries(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v2.db")
	db, err := sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v2, err := os.ReadFile("testdata/schema-v2.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(string(v2)); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1700000100, 0)
	for range 2 {
		if _, err := sqlite.New(db, sqlite.Options{Now: func() time.Time { return now }}); err != nil {
			t.Fatalf("New on a file of the previous release: %v", err)
		}
	}
	s, err := sqlite.New(db, sqlite.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	got, err := s.Deliveries(ctx, []int64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1]["app"].Status != inbox.DeliveryDelivered || got[3]["app"].Status != inbox.DeliveryFailed {
		t.Fatalf("deliveries after migration: %+v, want event 1's and 3's kept, 2's dropped", got)
	}
	evs, err := s.Lease(ctx, "w", 10, time.Minute)
	if err != nil || len(evs) != 1 || evs[0].ID != 2 {
		t.Fatalf("lease after migration: %v, %v; want the retrying event 2", evs, err)
	}
	if err := s.Finish(ctx, "w", []inbox.Result{{ID: 2, Status: inbox.StatusProcessed, Destinations: []string{"app"}}}); err != nil {
		t.Fatal(err)
	}
	out, err := s.Dispatch(ctx, "d", inbox.Lane{Source: "stripe", Destination: "app"}, nil, 10, time.Minute)
	if err != nil || len(out.Tasks) != 1 || out.Tasks[0].Event.ID != 2 || out.Tasks[0].Delivery.Attempts != 0 {
		t.Fatalf("dispatch after migration: %+v, %v; want event 2 afresh", out, err)
	}
	checkCounts(t, s, "after migration")
}

// TestErrors covers what callers can get wrong and the store refuses,
// writing nothing.
func TestErrors(t *testing.T) {
	t.Parallel()
	s := open(t, dedupetest.NewClock(time.Unix(1800000000, 0)))
	ctx := t.Context()
	ids := fill(t, s, 2)
	if _, err := s.Lease(ctx, "", 1, time.Minute); !errors.Is(err, inbox.ErrNoOwner) {
		t.Errorf("Lease with no owner: %v, want ErrNoOwner", err)
	}
	if err := s.Finish(ctx, "", []inbox.Result{{ID: ids[0], Status: inbox.StatusProcessed}}); !errors.Is(err, inbox.ErrNoOwner) {
		t.Errorf("Finish with no owner: %v, want ErrNoOwner", err)
	}
	if _, err := s.Lease(ctx, "w", 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	err := s.Finish(ctx, "w", []inbox.Result{{ID: ids[0], Status: inbox.StatusProcessed}, {ID: ids[1], Status: inbox.StatusReceived}})
	if !errors.Is(err, inbox.ErrBadResult) {
		t.Errorf("Finish to received: %v, want ErrBadResult", err)
	}
	if e, _ := s.Get(ctx, ids[0]); e.Status != inbox.StatusReceived {
		t.Errorf("event %d finished %s by a rejected Finish", ids[0], e.Status)
	}
	lane := inbox.Lane{Source: "stripe", Destination: "app"}
	sent := []inbox.Done{{Status: "sent", Attempt: inbox.Attempt{EventID: ids[0], Destination: "app"}}}
	if _, err := s.Dispatch(ctx, "w", lane, sent, 1, time.Minute); !errors.Is(err, inbox.ErrBadResult) {
		t.Errorf("Dispatch of an attempt with status sent: %v, want ErrBadResult", err)
	}
	if _, err := s.Dispatch(ctx, "", lane, nil, 1, time.Minute); !errors.Is(err, inbox.ErrNoOwner) {
		t.Errorf("Dispatch with no owner: %v, want ErrNoOwner", err)
	}
	evs := []inbox.Event{{ID: ids[0]}, {ID: ids[1] + 100}}
	if _, err := s.Apply(ctx, evs); !errors.Is(err, inbox.ErrNotFound) || errors.Is(err, dedupe.ErrUnavailable) {
		t.Errorf("Apply of an unknown id: %v, want ErrNotFound", err)
	}
	if e, _ := s.Get(ctx, ids[0]); e.Applied != nil {
		t.Errorf("event %d applied by a failed Apply: %+v", ids[0], e.Applied)
	}
}

// TestCancelled: an ended context is the caller's error, not the store's.
func TestCancelled(t *testing.T) {
	t.Parallel()
	s := open(t, dedupetest.NewClock(time.Unix(1800000000, 0)))
	fill(t, s, 1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Lease(ctx, "w", 1, time.Minute)
	if !errors.Is(err, context.Canceled) || errors.Is(err, dedupe.ErrUnavailable) {
		t.Errorf("Lease with a cancelled context: %v, want context.Canceled only", err)
	}
}

// TestUnavailable: a database that fails is reported as
// dedupe.ErrUnavailable.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "inbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.New(db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := s.Lease(t.Context(), "w", 1, time.Minute); !errors.Is(err, dedupe.ErrUnavailable) {
		t.Errorf("Lease on a closed database: %v, want ErrUnavailable", err)
	}
	if _, err := s.Stats(t.Context()); !errors.Is(err, dedupe.ErrUnavailable) {
		t.Errorf("Stats on a closed database: %v, want ErrUnavailable", err)
	}
}

// TestSweepManyChunks removes more processed events than one transaction
// takes.
func TestSweepManyChunks(t *testing.T) {
	t.Parallel()
	clock := dedupetest.NewClock(time.Unix(1800000000, 0))
	s := open(t, clock)
	const n = 1234
	fill(t, s, n)
	if _, err := leaseAndFinish(t.Context(), s, "w", n); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	res, err := s.Sweep(t.Context(), clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != n {
		t.Errorf("swept %d events, want %d", res.Events, n)
	}
}

// TestReplayManyIDs replays more listed ids than one statement binds.
func TestReplayManyIDs(t *testing.T) {
	t.Parallel()
	s := open(t, dedupetest.NewClock(time.Unix(1800000000, 0)))
	const n = 1234
	ids := fill(t, s, n)
	if _, err := leaseAndFinish(t.Context(), s, "w", n); err != nil {
		t.Fatal(err)
	}
	done, err := s.Replay(t.Context(), inbox.ReplayFilter{IDs: ids[1:], PageSize: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if done != n-1 {
		t.Errorf("replayed %d, want %d", done, n-1)
	}
	if e, _ := s.Get(t.Context(), ids[0]); e.Status != inbox.StatusProcessed {
		t.Errorf("unlisted event %d: %s, want processed", ids[0], e.Status)
	}
}

// groupedCounts counts the events table by source and status directly.
func groupedCounts(t *testing.T, db *sql.DB) map[string]map[inbox.Status]int {
	t.Helper()
	rows, err := db.Query("SELECT source, status, count(*) FROM events GROUP BY source, status")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]map[inbox.Status]int{}
	for rows.Next() {
		var (
			source, status string
			n              int
		)
		if err := rows.Scan(&source, &status, &n); err != nil {
			t.Fatal(err)
		}
		if got[source] == nil {
			got[source] = map[inbox.Status]int{}
		}
		got[source][inbox.Status(status)] = n
	}
	return got
}

// checkCounts compares Stats' counts by status with the events table.
func checkCounts(t *testing.T, s *sqlite.Store, when string) {
	t.Helper()
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := groupedCounts(t, s.DB())
	got := map[string]map[inbox.Status]int{}
	for name, ss := range st.Sources {
		if len(ss.ByStatus) > 0 {
			got[name] = ss.ByStatus
		}
	}
	if !maps.EqualFunc(got, want, maps.Equal) {
		t.Errorf("%s: Stats counts %v, the events table %v", when, got, want)
	}
}

// TestStatusCountsFollowEvents: the counts Stats reads stay equal to the
// events table through intake, every kind of finish, replay and sweep.
func TestStatusCountsFollowEvents(t *testing.T) {
	t.Parallel()
	clock := dedupetest.NewClock(time.Unix(1800000000, 0))
	s := open(t, clock)
	ctx := t.Context()
	items := benchItems("e", 30)
	for i := range items {
		items[i].Event.Source = []string{"stripe", "github"}[i%2]
	}
	if _, err := s.Accept(ctx, items); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Accept(ctx, items[:5]); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, s, "after intake")
	evs, err := s.Lease(ctx, "w", 20, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	results := make([]inbox.Result, len(evs))
	for i, e := range evs {
		results[i] = inbox.Result{ID: e.ID, Status: []inbox.Status{inbox.StatusProcessed, inbox.StatusRetry, inbox.StatusDead}[i%3]}
	}
	if err := s.Finish(ctx, "w", results); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, s, "after finish")
	if _, err := s.Replay(ctx, inbox.ReplayFilter{Dead: true}, nil); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, s, "after replay")
	clock.Advance(time.Second)
	if _, err := s.Sweep(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, s, "after sweep")
}

// TestDurableWrites: what acknowledges an event or records what a
// destination has seen returns only once an fsync covers its commit
// (G1); lease, apply and finish, which are redone after a crash, do not
// wait for one.
func TestDurableWrites(t *testing.T) {
	t.Parallel()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "inbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := sqlite.New(db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	durable := func(op string) {
		t.Helper()
		if n := db.Unsynced(); n != 0 {
			t.Errorf("%s returned with %d commits no fsync covers", op, n)
		}
	}
	lazy := func(op string) {
		t.Helper()
		if db.Unsynced() == 0 {
			t.Errorf("%s waited for an fsync", op)
		}
	}
	ev := inbox.Event{Hash: dedupe.Key{Tenant: "t", Provider: "p", EventID: "e1"}.Hash(),
		Scope: "s", Source: "src", Provider: "p", Tenant: "t", EventID: "e1", Payload: []byte(`{}`)}
	if _, err := s.Accept(ctx, []inbox.Item{{Event: ev, Window: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	durable("Accept")
	evs, err := s.Lease(ctx, "w", 1, time.Minute)
	if err != nil || len(evs) != 1 {
		t.Fatalf("Lease: %d events, %v", len(evs), err)
	}
	lazy("Lease")
	if _, err := s.Apply(ctx, evs); err != nil {
		t.Fatal(err)
	}
	lazy("Apply")
	err = s.Finish(ctx, "w", []inbox.Result{{ID: evs[0].ID, Status: inbox.StatusProcessed, Destinations: []string{"app"}}})
	if err != nil {
		t.Fatal(err)
	}
	lazy("Finish")
	lane := inbox.Lane{Source: "src", Destination: "app"}
	out, err := s.Dispatch(ctx, "d", lane, nil, 1, time.Minute)
	if err != nil || len(out.Tasks) != 1 {
		t.Fatalf("Dispatch: %d tasks, %v", len(out.Tasks), err)
	}
	durable("Dispatch")
	if err := s.CheckWrite(ctx); err != nil {
		t.Fatal(err)
	}
	durable("CheckWrite")
	if _, err := s.InitSetting(ctx, "name", "value"); err != nil {
		t.Fatal(err)
	}
	durable("InitSetting")
}

// Stores opened on one file race each other as the processes of one node
// do (the CLI beside serve, a restart overlapping the old process): the
// file's locks and the single writer keep the races the nodes suite
// checks on PostgreSQL.
func TestNodes(t *testing.T) {
	t.Parallel()
	inboxtest.ExerciseNodes(t, func(t *testing.T, clock *inboxtest.Clock) func() inbox.Store {
		path := filepath.Join(t.TempDir(), "inbox.db")
		return func() inbox.Store {
			s, err := sqlite.Open(path, sqlite.Options{Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}
