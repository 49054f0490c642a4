package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/inboxtest"
	"github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// open opens a store on url that reads time from clock. It is closed at
// the end of the test, within seconds (see closeWithin).
func open(t testing.TB, url string, clock *inboxtest.Clock) *postgres.Store {
	t.Helper()
	var opts postgres.Options
	if clock != nil {
		opts.Now = clock.Now
	}
	return openWith(t, url, opts)
}

// openWith opens a Store on url with opts, closed when t ends.
func openWith(t testing.TB, url string, opts postgres.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(t, "store", s.Close) })
	return s
}

func TestInbox(t *testing.T) {
	t.Parallel()
	inboxtest.Exercise(t, func(t *testing.T, clock *inboxtest.Clock) inbox.Store {
		return open(t, postgres.Migrated.New(t), clock)
	})
}

func TestNodes(t *testing.T) {
	t.Parallel()
	inboxtest.ExerciseNodes(t, func(t *testing.T, clock *inboxtest.Clock) func() inbox.Store {
		url := pgtest.New(t)
		return func() inbox.Store { return open(t, url, clock) }
	})
}

// TestAcceptRepeatedHash: a batch that carries one hash twice is the
// caller's mistake, reported as such, and writes nothing.
func TestAcceptRepeatedHash(t *testing.T) {
	t.Parallel()
	s := open(t, postgres.Migrated.New(t), nil)
	_, err := s.Accept(t.Context(), []inbox.Item{testItem("a"), testItem("b"), testItem("a")})
	if !errors.Is(err, postgres.ErrRepeatedHash) || errors.Is(err, dedupe.ErrUnavailable) {
		t.Fatalf("Accept of a repeated hash: %v, want ErrRepeatedHash only", err)
	}
	if evs, err := s.List(t.Context(), inbox.Filter{}); err != nil || len(evs) != 0 {
		t.Errorf("stored %v, %v; want nothing", evs, err)
	}
}

// TestTextPostgresCannotHold: PostgreSQL's text holds neither NUL nor
// invalid UTF-8, which a sender can put in a key part (a JSON "\u0000", a
// header's raw bytes) and a destination in its answer. Such an event is
// accepted and processed like any other, with those characters stored as
// U+FFFD, instead of failing its whole batch, or its lane's every record,
// as unavailable.
func TestTextPostgresCannotHold(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, postgres.Migrated.New(t), nil)
	odd := testItem("evt\x00nul")
	odd.Event.Tenant, odd.Event.EntityID, odd.Event.EntityState = "t\xff", "ch\x00", "paid\xc3"
	odd.Event.Headers = map[string]string{"X-Id": "a\x00b"}
	out, err := s.Accept(ctx, []inbox.Item{testItem("plain"), odd})
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	e, err := s.Get(ctx, out[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if e.EventID != "evt\uFFFDnul" || e.Tenant != "t\uFFFD" || e.EntityID != "ch\uFFFD" || e.Headers["X-Id"] != "a\x00b" || e.Hash != odd.Event.Hash {
		t.Errorf("stored %q %q %q %q, hash %s; want U+FFFD for what text cannot hold, headers as sent, the same hash",
			e.EventID, e.Tenant, e.EntityID, e.Headers, e.Hash)
	}
	evs, err := s.Lease(ctx, "w", 2, time.Minute)
	if err != nil || len(evs) != 2 {
		t.Fatalf("Lease: %v, %v", evs, err)
	}
	if _, err := s.Apply(ctx, evs); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if err := s.Finish(ctx, "w", []inbox.Result{
		{ID: evs[0].ID, Status: inbox.StatusDead, Error: "schema: \x00"},
		{ID: evs[1].ID, Status: inbox.StatusProcessed, Destinations: []string{"app"}},
	}); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	lane := inbox.Lane{Source: "shop", Destination: "app"}
	if _, err := s.Dispatch(ctx, "d", lane, nil, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := s.Dispatch(ctx, "d", lane, []inbox.Done{{Status: inbox.DeliveryFailed,
		Attempt: inbox.Attempt{EventID: evs[1].ID, Destination: "app", Code: 400, Error: "bad \xff", Body: "\x00"}}}, 0, time.Minute)
	if err != nil || len(got.Settled) != 1 || got.Settled[0].Status != inbox.StatusDead {
		t.Fatalf("Dispatch of an odd answer: %+v, %v; want the event dead", got, err)
	}
	if err := s.SetLaneState(ctx, inbox.LaneState{Lane: lane, State: inbox.LaneFailing, LastError: "bad \xff"}); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseSkipsLockedRows: a row another transaction holds locked (here
// a plain SELECT ... FOR UPDATE on another connection) is passed over, not
// waited for: Lease and Dispatch take the other due rows at once. Each
// call has a deadline, so a lease that waits for the lock fails within
// seconds instead of hanging the test.
func TestLeaseSkipsLockedRows(t *testing.T) {
	t.Parallel()
	url := postgres.Migrated.New(t)
	s := open(t, url, nil)
	out, err := s.Accept(t.Context(), []inbox.Item{testItem("a"), testItem("b"), testItem("c")})
	if err != nil {
		t.Fatal(err)
	}
	ids := []int64{out[0].ID, out[1].ID, out[2].ID}
	other, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	hold := func(query string) pgx.Tx {
		t.Helper()
		tx, err := other.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(t.Context(), query, ids[0]); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	soon := func() context.Context {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		t.Cleanup(cancel)
		return ctx
	}

	tx := hold(`SELECT id FROM inbox_events WHERE id = $1 FOR UPDATE`)
	evs, err := s.Lease(soon(), "w1", 10, time.Minute)
	if err != nil {
		t.Fatalf("Lease beside a locked event: %v (it waited for the lock)", err)
	}
	if got := eventIDs(evs); !slices.Equal(got, ids[1:]) {
		t.Errorf("leased %v beside the locked event %d, want %v", got, ids[0], ids[1:])
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	first, err := s.Lease(soon(), "w2", 10, time.Minute)
	if err != nil || !slices.Equal(eventIDs(first), ids[:1]) {
		t.Fatalf("after the lock: leased %v, %v; want %v", eventIDs(first), err, ids[:1])
	}
	for _, e := range append(evs, first...) {
		owner := "w1"
		if e.ID == ids[0] {
			owner = "w2"
		}
		if err := s.Finish(t.Context(), owner, []inbox.Result{{ID: e.ID, Status: inbox.StatusProcessed, Destinations: []string{"app"}}}); err != nil {
			t.Fatal(err)
		}
	}

	tx = hold(`SELECT event_id FROM inbox_deliveries WHERE event_id = $1 FOR UPDATE`)
	defer tx.Rollback(context.Background())
	lane := inbox.Lane{Source: "shop", Destination: "app"}
	d, err := s.Dispatch(soon(), "d", lane, nil, 10, time.Minute)
	if err != nil {
		t.Fatalf("Dispatch beside a locked delivery: %v (it waited for the lock)", err)
	}
	var got []int64
	for _, task := range d.Tasks {
		got = append(got, task.Delivery.EventID)
	}
	if !slices.Equal(got, ids[1:]) {
		t.Errorf("dispatch leased %v beside the locked delivery of %d, want %v", got, ids[0], ids[1:])
	}
}

func eventIDs(evs []inbox.Event) []int64 {
	ids := make([]int64, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	return ids
}
