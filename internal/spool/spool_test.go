package spool_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxpostgres "github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/internal/spool"
)

func item(id string) inbox.Item {
	k := dedupe.Key{Tenant: "acme", Provider: "shop", ObjectType: "event", Action: "any", EventID: id}
	return inbox.Item{Event: inbox.Event{
		Hash: k.Hash(), Scope: k.Scope(), Source: "shop", Provider: "standard", Tenant: "acme",
		EventID: id, Payload: []byte(`{"id":"` + id + `"}`), Headers: map[string]string{"X-Raw": "caf\xe9"},
	}, Window: time.Hour}
}

func openSpool(t *testing.T, path string) *spool.Spool {
	t.Helper()
	s, err := spool.Open(t.Context(), path, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openInbox(t *testing.T, url string) *inboxpostgres.Store {
	t.Helper()
	s, err := inboxpostgres.Open(t.Context(), url, inboxpostgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func statuses(outs []inbox.Outcome) []dedupe.Status {
	st := make([]dedupe.Status, len(outs))
	for i, o := range outs {
		st[i] = o.Status
	}
	return st
}

func wantStatuses(t *testing.T, what string, outs []inbox.Outcome, err error, want ...dedupe.Status) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	got := statuses(outs)
	if len(got) != len(want) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
}

// failures is the inbox with a signal on each Accept that fails.
type failures struct {
	spool.Acceptor
	failed chan struct{}
}

func (f *failures) Accept(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	outs, err := f.Acceptor.Accept(ctx, items)
	if err != nil {
		select {
		case f.failed <- struct{}{}:
		default:
		}
	}
	return outs, err
}

// waitFor polls cond until it holds, failing t after 30 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A key is spooled once: a redelivery during the outage is a duplicate,
// also after the spool file is opened again (the spool is durable).
func TestPutKeepsOneCopy(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "spool.db")
	s := openSpool(t, path)
	outs, err := s.Put(t.Context(), []inbox.Item{item("a"), item("b")})
	wantStatuses(t, "first put", outs, err, dedupe.New, dedupe.New)
	outs, err = s.Put(t.Context(), []inbox.Item{item("a"), item("c")})
	wantStatuses(t, "second put", outs, err, dedupe.Duplicate, dedupe.New)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := openSpool(t, path)
	outs, err = again.Put(t.Context(), []inbox.Item{item("b")})
	wantStatuses(t, "put after reopening", outs, err, dedupe.Duplicate)
	st, err := again.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Spooled != 3 || st.Waiting != 3 || st.OldestWaiting.IsZero() {
		t.Fatalf("stats %+v, want 3 spooled and waiting", st)
	}
}

// Draining hands the events to the inbox in arrival order, byte for byte;
// the inbox decides: an event it already held is recorded as a duplicate
// and not stored again.
func TestDrainLetsTheInboxDecide(t *testing.T) {
	t.Parallel()
	in := openInbox(t, pgtest.New(t))
	if _, err := in.Accept(t.Context(), []inbox.Item{item("before")}); err != nil {
		t.Fatal(err)
	}
	s := openSpool(t, filepath.Join(t.TempDir(), "spool.db"))
	for _, id := range []string{"x", "before", "y"} {
		if _, err := s.Put(t.Context(), []inbox.Item{item(id)}); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := s.Drain(t.Context(), in, 2); err != nil || d.Moved != 2 {
		t.Fatalf("first drain: %+v, %v; want 2 moved", d, err)
	}
	if d, err := s.Drain(t.Context(), in, 10); err != nil || d.Moved != 1 {
		t.Fatalf("second drain: %+v, %v; want 1 moved", d, err)
	}
	if d, err := s.Drain(t.Context(), in, 10); err != nil || !d.Empty() {
		t.Fatalf("drain of an empty spool: %+v, %v", d, err)
	}
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Spooled != 3 || st.Waiting != 0 || st.Drained != 3 || st.Duplicates != 1 {
		t.Fatalf("stats %+v, want 3 drained, 1 duplicate", st)
	}
	evs, err := in.List(t.Context(), inbox.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range evs {
		order = append([]string{e.EventID}, order...)
		if e.EventID == "x" && e.Headers["X-Raw"] != "caf\uFFFD" && e.Headers["X-Raw"] != "caf\xe9" {
			t.Errorf("header after the spool: %q", e.Headers["X-Raw"])
		}
	}
	if len(order) != 3 || order[0] != "before" || order[1] != "x" || order[2] != "y" {
		t.Fatalf("inbox holds %v, want before, x, y once each in that order", order)
	}
}

// Through an outage: events go to the inbox while it answers, to the
// spool while it does not (no error for the caller), and the spool drains
// into it once it is back; the inbox ends with each event once, and the
// copy of an event stored before the outage is recorded a duplicate.
func TestFallbackRidesOutAnOutage(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	proxy, viaProxy := pgtest.NewProxy(t, db)
	in := &failures{Acceptor: openInbox(t, viaProxy), failed: make(chan struct{}, 100)}
	sp := openSpool(t, filepath.Join(t.TempDir(), "spool.db"))
	f := spool.NewFallback(in, sp, spool.FallbackOptions{Timeout: time.Second, Retry: 50 * time.Millisecond})

	outs, err := f.Accept(t.Context(), []inbox.Item{item("before")})
	wantStatuses(t, "before the outage", outs, err, dedupe.New)
	if outs[0].ID == 0 || f.Spooling() {
		t.Fatalf("before the outage: %+v (spooling %v), want stored in the inbox", outs[0], f.Spooling())
	}
	proxy.Cut()
	outs, err = f.Accept(t.Context(), []inbox.Item{item("during1"), item("before")})
	wantStatuses(t, "during the outage", outs, err, dedupe.New, dedupe.New)
	if !f.Spooling() {
		t.Fatal("not spooling during the outage")
	}
	outs, err = f.Accept(t.Context(), []inbox.Item{item("during1"), item("during2")})
	wantStatuses(t, "a redelivery during the outage", outs, err, dedupe.Duplicate, dedupe.New)

	for len(in.failed) > 0 { // the failures of the writes above
		<-in.failed
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for range 2 { // drains tried and failed while cut
		<-in.failed
	}
	if st, err := sp.Stats(t.Context()); err != nil || st.Waiting != 3 {
		t.Fatalf("while cut: %+v, %v; want 3 waiting", st, err)
	}
	proxy.Restore()
	waitFor(t, "the spool to drain after the restore", func() bool {
		st, err := sp.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return st.Waiting == 0
	})
	if st, err := sp.Stats(t.Context()); err != nil || st.Drained != 3 || st.Duplicates != 1 {
		t.Fatalf("after the drain: %+v, %v; want 3 drained, 1 duplicate", st, err)
	}
	direct := openInbox(t, db)
	st, err := direct.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Sources["shop"].Accepted; n != 3 {
		t.Fatalf("inbox accepted %d, want 3 (before, during1, during2)", n)
	}
	outs, err = f.Accept(t.Context(), []inbox.Item{item("after")})
	wantStatuses(t, "after the outage", outs, err, dedupe.New)
	if outs[0].ID == 0 || f.Spooling() {
		t.Fatalf("after the outage: %+v (spooling %v), want stored in the inbox", outs[0], f.Spooling())
	}
}

// An error of the inbox that is not unavailability (a caller's mistake)
// is returned, and nothing is spooled.
func TestFallbackReturnsRefusals(t *testing.T) {
	t.Parallel()
	in := openInbox(t, pgtest.New(t))
	sp := openSpool(t, filepath.Join(t.TempDir(), "spool.db"))
	f := spool.NewFallback(in, sp, spool.FallbackOptions{})
	_, err := f.Accept(t.Context(), []inbox.Item{item("twice"), item("twice")})
	if !errors.Is(err, inboxpostgres.ErrRepeatedHash) {
		t.Fatalf("a batch with one hash twice: %v, want ErrRepeatedHash", err)
	}
	if st, err := sp.Stats(t.Context()); err != nil || st.Spooled != 0 || f.Spooling() {
		t.Fatalf("spool %+v, %v (spooling %v); want nothing spooled", st, err, f.Spooling())
	}
}
