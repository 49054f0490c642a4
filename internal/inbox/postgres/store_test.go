package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/inboxtest"
	"github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// open opens a store on url that reads time from clock.
func open(t testing.TB, url string, clock *inboxtest.Clock) *postgres.Store {
	t.Helper()
	var opts postgres.Options
	if clock != nil {
		opts.Now = clock.Now
	}
	s, err := postgres.Open(t.Context(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestInbox(t *testing.T) {
	t.Parallel()
	inboxtest.Exercise(t, func(t *testing.T, clock *inboxtest.Clock) inbox.Store {
		return open(t, pgtest.New(t), clock)
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
	s := open(t, pgtest.New(t), nil)
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
	s := open(t, pgtest.New(t), nil)
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
