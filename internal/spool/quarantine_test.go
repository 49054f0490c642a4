package spool_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/internal/spool"
	"github.com/hookgate/hookgate/internal/sqlitedb"
)

// corrupt overwrites the stored item of the spooled event id in the
// spool file at path (closed) with garbage, as a damaged disk would.
func corrupt(t *testing.T, path, id string, garbage []byte) {
	t.Helper()
	db, err := sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h := item(id).Event.Hash
	res, err := db.Exec(`UPDATE spool SET item = ? WHERE hash = ?`, garbage, h[:])
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("corrupted %d rows (%v), want 1", n, err)
	}
}

// G4: a spooled row that cannot be decoded is set aside, never a wall: it
// is quarantined once (kept with its bytes, counted, reported in the one
// drain that found it), the events behind it drain, the node is degraded
// ("spool quarantine") for as long as it is kept, across a restart too.
func TestCorruptRowIsQuarantined(t *testing.T) {
	t.Parallel()
	in := openInbox(t, pgtest.New(t))
	path := filepath.Join(t.TempDir(), "spool.db")
	s := openSpool(t, path)
	for _, id := range []string{"a", "bad", "b"} {
		if _, err := s.Put(t.Context(), []inbox.Item{item(id)}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	garbage := []byte("\x00\xffnot an event")
	corrupt(t, path, "bad", garbage)

	s = openSpool(t, path)
	f := spool.NewFallback(in, s, spool.FallbackOptions{})
	if r := f.Degraded(); r != "" {
		t.Fatalf("degraded %q before the drain found the row", r)
	}
	d, err := s.Drain(t.Context(), in, 500)
	if err != nil {
		t.Fatalf("drain past a corrupt row: %v", err)
	}
	if d.Moved != 2 || len(d.Quarantined) != 1 || !bytes.Equal(d.Quarantined[0].Item, garbage) || d.Quarantined[0].Reason == "" {
		t.Fatalf("drain: %+v, want 2 moved and the corrupt row quarantined with its bytes and why", d)
	}
	if d, err := s.Drain(t.Context(), in, 500); err != nil || !d.Empty() {
		t.Fatalf("next drain: %+v, %v; want nothing to do (the row is reported once)", d, err)
	}
	if st, err := s.Stats(t.Context()); err != nil || st.Spooled != 3 || st.Drained != 2 || st.Waiting != 0 || st.Quarantined != 1 {
		t.Fatalf("stats %+v, %v; want 3 spooled, 2 drained, 0 waiting, 1 quarantined", st, err)
	}
	if n := accepted(t, in); n != 2 {
		t.Fatalf("inbox accepted %d, want 2", n)
	}
	if r := f.Degraded(); !strings.HasPrefix(r, "spool quarantine") {
		t.Fatalf("degraded %q, want spool quarantine", r)
	}
	s.Close()

	again := openSpool(t, path)
	qs, err := again.Quarantined(t.Context())
	if err != nil || len(qs) != 1 || !bytes.Equal(qs[0].Item, garbage) {
		t.Fatalf("quarantined after reopening: %+v, %v; want the row with its bytes", qs, err)
	}
	if r := spool.NewFallback(in, again, spool.FallbackOptions{}).Degraded(); !strings.HasPrefix(r, "spool quarantine") {
		t.Fatalf("degraded %q after reopening, want spool quarantine", r)
	}
}

// A copy of a quarantined event that arrives after the event's window has
// passed (the provider sent it again) replaces the quarantined row: the
// event drains from it, and the node is no longer degraded.
func TestLateCopyReplacesAQuarantinedRow(t *testing.T) {
	t.Parallel()
	in := openInbox(t, pgtest.New(t))
	clock := dedupetest.NewClock(time.Now())
	path := filepath.Join(t.TempDir(), "spool.db")
	open := func() *spool.Spool {
		s, err := spool.Open(t.Context(), path, spool.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s := open()
	if _, err := s.Put(t.Context(), []inbox.Item{item("bad")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	corrupt(t, path, "bad", []byte("garbage"))
	s = open()
	f := spool.NewFallback(in, s, spool.FallbackOptions{})
	if d, err := s.Drain(t.Context(), in, 500); err != nil || len(d.Quarantined) != 1 {
		t.Fatalf("drain: %+v, %v; want the row quarantined", d, err)
	}
	clock.Advance(2 * time.Hour) // past the item's window of an hour
	outs, err := s.Put(t.Context(), []inbox.Item{item("bad")})
	wantStatuses(t, "the late copy", outs, err, dedupe.New)
	if r := f.Degraded(); r != "" {
		t.Fatalf("degraded %q once the quarantined row was replaced", r)
	}
	if d, err := s.Drain(t.Context(), in, 500); err != nil || d.Moved != 1 {
		t.Fatalf("drain of the late copy: %+v, %v", d, err)
	}
	if st, err := s.Stats(t.Context()); err != nil || st.Quarantined != 0 || st.Drained != 1 {
		t.Fatalf("stats %+v, %v; want 1 drained, none quarantined", st, err)
	}
}

// countingHandler keeps the messages of the error records logged.
type countingHandler struct {
	slog.Handler
	mu     sync.Mutex
	errors []string
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.mu.Lock()
		h.errors = append(h.errors, r.Message)
		h.mu.Unlock()
	}
	return nil
}

func (h *countingHandler) logged() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.errors)
}

// A quarantined row is logged once, at error level, however many drains
// follow: the fallback's drains after more events are spooled do not
// report it again.
func TestQuarantineIsLoggedOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	proxy, viaProxy := pgtest.NewProxy(t, db)
	in := openInbox(t, viaProxy)
	path := filepath.Join(t.TempDir(), "spool.db")
	s := openSpool(t, path)
	if _, err := s.Put(t.Context(), []inbox.Item{item("bad"), item("a")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	corrupt(t, path, "bad", []byte("garbage"))
	s = openSpool(t, path)
	h := &countingHandler{Handler: slog.DiscardHandler}
	f := spool.NewFallback(in, s, spool.FallbackOptions{Retry: 20 * time.Millisecond, Logger: slog.New(h)})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	drained := func(n int64) func() bool {
		return func() bool {
			st, err := s.Stats(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			return st.Drained == n
		}
	}
	waitFor(t, "the readable event to drain", drained(1))
	// Each outage spools one more event, which the fallback drains once
	// the inbox is back: a drain each time, past the quarantined row.
	for i := range 3 {
		proxy.Cut()
		outs, err := f.Accept(t.Context(), []inbox.Item{item(fmt.Sprintf("later%d", i))})
		wantStatuses(t, "an event while cut", outs, err, dedupe.New)
		proxy.Restore()
		waitFor(t, "the spooled event to drain", drained(int64(2+i)))
	}
	var quarantined []string
	for _, msg := range h.logged() {
		if strings.Contains(msg, "quarantined") {
			quarantined = append(quarantined, msg)
		}
	}
	if len(quarantined) != 1 {
		t.Fatalf("the quarantine logged %d times (%q), want once", len(quarantined), quarantined)
	}
}
