package spool_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxpostgres "github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/internal/spool"
)

// request returns the items of one guarded request: the events ids, all
// with the replay guard digest of signed.
func request(signed string, ids ...string) []inbox.Item {
	d := dedupe.Key{Provider: "digest", EventID: signed}.Hash()
	items := make([]inbox.Item, len(ids))
	for i, id := range ids {
		items[i] = item(id)
		items[i].Digest = d
	}
	return items
}

// G2 through the spool: a replay of a spooled request (the same signed
// body under new unsigned ids, so new keys) is a duplicate, as the
// database's replay guard would answer, also after the file is opened
// again; the replay stores nothing.
func TestPutAnswersReplays(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "spool.db")
	s := openSpool(t, path)
	outs, err := s.Put(t.Context(), request("body", "d-1a", "d-1b"))
	wantStatuses(t, "the request", outs, err, dedupe.New, dedupe.New)
	first := outs[0].FirstSeen
	outs, err = s.Put(t.Context(), append(request("body", "d-2a", "d-2b"), item("other")))
	wantStatuses(t, "its replay beside another event", outs, err, dedupe.Duplicate, dedupe.Duplicate, dedupe.New)
	if !outs[0].FirstSeen.Equal(first) {
		t.Errorf("replay first seen %v, want the request's %v", outs[0].FirstSeen, first)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again := openSpool(t, path)
	outs, err = again.Put(t.Context(), request("body", "d-3"))
	wantStatuses(t, "a replay after reopening", outs, err, dedupe.Duplicate)
	if st, err := again.Stats(t.Context()); err != nil || st.Spooled != 3 {
		t.Fatalf("stats %+v, %v; want 3 spooled (the request's two events and the other)", st, err)
	}
}

// The drain hands a request's events to the inbox in one Accept, however
// small the batch: the inbox keeps the request's digest with the first
// of its events it sees, so a request split over two Accepts would lose
// the second part as a replay.
func TestDrainKeepsARequestWhole(t *testing.T) {
	t.Parallel()
	in := openInbox(t, pgtest.New(t))
	s := openSpool(t, filepath.Join(t.TempDir(), "spool.db"))
	if _, err := s.Put(t.Context(), append(request("batch", "a", "b", "c"), item("d"))); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Drain(t.Context(), in, 2); err != nil || d.Moved != 3 {
		t.Fatalf("drain of 2: %+v, %v; want the request's 3 events", d, err)
	}
	drainAll(t, s, in)
	if st, err := s.Stats(t.Context()); err != nil || st.Drained != 4 || st.Duplicates != 0 {
		t.Fatalf("stats %+v, %v; want 4 drained, no duplicate", st, err)
	}
	if n := accepted(t, in); n != 4 {
		t.Fatalf("inbox accepted %d, want 4", n)
	}
}

// Of two spooled requests with one digest, the inbox stores the first and
// finds the other a replay at drain: the drain never puts both in one
// Accept (which holds at most one request per digest, and would keep
// both). The spool takes the second only once the first one's window has
// passed, as the database would.
func TestDrainKeepsOneRequestPerDigest(t *testing.T) {
	t.Parallel()
	in := openInbox(t, pgtest.New(t))
	clock := dedupetest.NewClock(time.Now())
	s, err := spool.Open(t.Context(), filepath.Join(t.TempDir(), "spool.db"), spool.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	outs, err := s.Put(t.Context(), request("body", "first"))
	wantStatuses(t, "the request", outs, err, dedupe.New)
	clock.Advance(2 * time.Hour) // past the items' window of an hour
	outs, err = s.Put(t.Context(), request("body", "replay"))
	wantStatuses(t, "its replay after the window", outs, err, dedupe.New)
	drainAll(t, s, in)
	if st, err := s.Stats(t.Context()); err != nil || st.Drained != 2 || st.Duplicates != 1 {
		t.Fatalf("stats %+v, %v; want 2 drained, 1 duplicate at drain", st, err)
	}
	if n := accepted(t, in); n != 1 {
		t.Fatalf("inbox accepted %d, want 1", n)
	}
}

// drainAll drains s into in until nothing waits.
func drainAll(t *testing.T, s *spool.Spool, in spool.Acceptor) {
	t.Helper()
	for range 100 {
		d, err := s.Drain(t.Context(), in, 500)
		if err != nil {
			t.Fatal(err)
		}
		if d.Empty() {
			return
		}
	}
	t.Fatal("the spool did not empty in 100 drains")
}

// accepted is how many events of the test source the inbox stored.
func accepted(t *testing.T, in *inboxpostgres.Store) int64 {
	t.Helper()
	st, err := in.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return st.Sources["shop"].Accepted
}
