package spool_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxpostgres "github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/internal/testproc"
)

// offers is the inbox, counting how often each event is offered to it;
// with fill armed, the first Accept that succeeds leaves the disk full
// behind it, so that the spool cannot record its outcomes.
type offers struct {
	*inboxpostgres.Store
	mu    sync.Mutex
	n     map[dedupe.Hash]int
	fill  func()
	armed bool
}

func (o *offers) Accept(ctx context.Context, items []inbox.Item) ([]inbox.Outcome, error) {
	outs, err := o.Store.Accept(ctx, items)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, it := range items {
		o.n[it.Event.Hash]++
	}
	if err == nil && o.armed {
		o.armed = false
		o.fill()
	}
	return outs, err
}

// most is the largest number of offers of one event.
func (o *offers) most() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := 0
	for _, n := range o.n {
		m = max(m, n)
	}
	return m
}

// G4 with a full disk after the outage: the inbox took a drained batch,
// and the spool cannot write the outcomes. The drained events are never
// offered again as if new (no false duplicates in the inbox), the counts
// stay true meanwhile, and once the disk has room the outcomes are
// written. A node that stops before (its outcomes in memory lost) offers
// the batch again at its next start: the inbox answers duplicate for its
// own copies, and they are recorded new.
//
// The full disk is the kernel's: the file size limit (RLIMIT_FSIZE) of a
// child process set to 0, so that every write to a file fails (EFBIG)
// until it is raised again. Only the child's files are limited.
func TestFullDiskKeepsDrainOutcomes(t *testing.T) {
	if c, ok := testproc.AsChild(t); ok {
		fullDiskChild(t, c)
		return
	}
	t.Parallel()
	testproc.Run(t, 1, "")
}

func fullDiskChild(t *testing.T, c *testproc.Child) {
	ctx := t.Context()
	var room unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &room); err != nil {
		t.Fatal(err)
	}
	full := room
	full.Cur = 0
	setLimit := func(l unix.Rlimit) {
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &l); err != nil {
			t.Fatal(err)
		}
	}
	in := &offers{Store: openInbox(t, pgtest.New(t)), n: map[dedupe.Hash]int{}, fill: func() { setLimit(full) }}
	dir := t.TempDir()
	c.Ready(t)

	s := openSpool(t, filepath.Join(dir, "spool.db"))
	if _, err := s.Put(ctx, append(request("body", "r1", "r2", "r3"), item("a"), item("b"))); err != nil {
		t.Fatal(err)
	}
	in.armed = true
	if _, err := s.Drain(ctx, in, 500); err == nil {
		t.Fatal("drain with a full disk behind the Accept: no error")
	}
	for range 3 {
		if _, err := s.Drain(ctx, in, 500); err == nil {
			t.Fatal("drain while the disk is full: no error")
		}
		if st, err := s.Stats(ctx); err != nil || st.Drained != 5 || st.Waiting != 0 || st.Duplicates != 0 {
			t.Fatalf("stats while the disk is full: %+v, %v; want 5 drained, none waiting, no duplicate", st, err)
		}
	}
	setLimit(room)
	if d, err := s.Drain(ctx, in, 500); err != nil || d.Moved != 5 {
		t.Fatalf("drain once the disk has room: %+v, %v; want the 5 outcomes recorded", d, err)
	}
	if d, err := s.Drain(ctx, in, 500); err != nil || !d.Empty() {
		t.Fatalf("next drain: %+v, %v; want nothing left", d, err)
	}
	if n := in.most(); n != 1 {
		t.Fatalf("an event was offered to the inbox %d times, want once", n)
	}
	st, err := in.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if src := st.Sources["shop"]; src.Accepted != 5 || src.Duplicates != 0 {
		t.Fatalf("inbox: %d accepted, %d duplicates; want 5 and none", src.Accepted, src.Duplicates)
	}

	// The node stops while the disk is full, and starts again.
	path := filepath.Join(dir, "stopped.db")
	s = openSpool(t, path)
	if _, err := s.Put(ctx, []inbox.Item{item("c"), item("d")}); err != nil {
		t.Fatal(err)
	}
	in.armed = true
	if _, err := s.Drain(ctx, in, 500); err == nil {
		t.Fatal("drain with a full disk behind the Accept: no error")
	}
	s.Close()
	setLimit(room)
	s = openSpool(t, path)
	if d, err := s.Drain(ctx, in, 500); err != nil || d.Moved != 2 {
		t.Fatalf("drain after the restart: %+v, %v; want 2", d, err)
	}
	if st, err := s.Stats(ctx); err != nil || st.Drained != 2 || st.Duplicates != 0 {
		t.Fatalf("stats after the restart: %+v, %v; want 2 drained, no duplicate (the inbox's copies are its own)", st, err)
	}
	c.Report(t, "ok")
}
