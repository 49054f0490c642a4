package cli

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// committedStore is an inbox whose List reads the events committed so far,
// which need not be in id order: it stands for PostgreSQL, where an event
// can commit after one with a larger id.
type committedStore struct {
	inbox.Store
	mu     sync.Mutex
	events []inbox.Event
}

// commit makes the events of ids visible.
func (s *committedStore) commit(ids ...int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.events = append(s.events, inbox.Event{ID: id, Source: "shop"})
	}
}

// List implements the part of inbox.Store.List a follower uses: AfterID,
// BeforeID and Limit, newest first.
func (s *committedStore) List(_ context.Context, f inbox.Filter) ([]inbox.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var match []inbox.Event
	for _, e := range s.events {
		if (f.AfterID == 0 || e.ID > f.AfterID) && (f.BeforeID == 0 || e.ID < f.BeforeID) {
			match = append(match, e)
		}
	}
	slices.SortFunc(match, func(a, b inbox.Event) int { return int(a.ID - b.ID) })
	if f.AfterID > 0 {
		match = match[:min(len(match), f.Limit)]
	} else {
		match = match[max(0, len(match)-f.Limit):]
	}
	slices.Reverse(match)
	return match, nil
}

// TestFollowerLateCommit: an event that commits after one with a larger
// id, within the settle time, is still returned, and no event is returned
// twice.
func TestFollowerLateCommit(t *testing.T) {
	s := &committedStore{}
	s.commit(1, 2, 3)
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	f := &follower{store: s, settle: 5 * time.Second, now: func() time.Time { return now }}
	ctx := t.Context()
	polls := func(want ...int64) {
		t.Helper()
		got, err := f.poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ids := idsOf(got); !slices.Equal(ids, want) {
			t.Errorf("poll = %v, want %v", ids, want)
		}
	}
	first, err := f.start(ctx, 2)
	if err != nil || !slices.Equal(idsOf(first), []int64{2, 3}) {
		t.Fatalf("start = %v, %v; want 2, 3", idsOf(first), err)
	}
	s.commit(5)
	polls(5)
	now = now.Add(time.Second)
	s.commit(4) // took its id before 5, committed after
	polls(4)
	polls()
	now = now.Add(10 * time.Second)
	s.commit(6)
	polls(6)
	now = now.Add(10 * time.Second)
	polls()
	if f.from != 6 || len(f.printed) != 0 {
		t.Errorf("after the settle time: reading from %d, remembering %v; want from 6, nothing", f.from, f.printed)
	}
}

// TestFollowerPages: more new events than one List returns are all
// returned, in order.
func TestFollowerPages(t *testing.T) {
	s := &committedStore{}
	s.commit(1)
	f := &follower{store: s, settle: time.Second, now: time.Now}
	if _, err := f.start(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for id := int64(2); id < 2+2*tailPage+3; id++ {
		s.commit(id)
		want = append(want, id)
	}
	got, err := f.poll(t.Context())
	if err != nil || !slices.Equal(idsOf(got), want) {
		t.Errorf("poll = %d events (%v), want %d in order", len(got), err, len(want))
	}
}

func idsOf(events []inbox.Event) []int64 {
	ids := make([]int64, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	return ids
}
