package cli

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// errStop stands for a forward that did not finish: the app refused the
// event and listen was stopped, or killed.
var errStop = errors.New("stopped")

// relayRun is a listen over s: every event it handles is recorded, and it
// stops at the event whose ID is in stopAt.
type relayRun struct {
	r       *relay
	handled *[]int64
	saved   *progress
}

func newRelayRun(s lister, now func() time.Time, at progress, handled *[]int64, stopAt int64) *relayRun {
	fl := &follower{store: s, settle: 5 * time.Second, now: now}
	fl.resume(at.From, at.Done)
	run := &relayRun{handled: handled, saved: &progress{}}
	*run.saved = at
	run.r = &relay{fl: fl, saved: at,
		handle: func(_ context.Context, e inbox.Event) error {
			if e.ID == stopAt {
				return errStop
			}
			*handled = append(*handled, e.ID)
			return nil
		},
		save: func(p progress) error {
			*run.saved = progress{From: p.From, Done: slices.Clone(p.Done)}
			return nil
		},
	}
	return run
}

// TestRelayResumesWhereItStopped: a listen stopped in the middle of a
// poll's events, just after the follower moved its reading point past
// events that committed late, saved a progress from which a new listen
// handles exactly the events the first did not: none twice, none
// skipped.
func TestRelayResumesWhereItStopped(t *testing.T) {
	s := &committedStore{}
	s.commit(1, 2, 3)
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var handled []int64
	first := newRelayRun(s, clock, progress{From: 3}, &handled, 5)
	step := func(run *relayRun) error {
		t.Helper()
		return run.r.step(t.Context())
	}

	s.commit(6)
	if err := step(first); err != nil {
		t.Fatal(err)
	}
	// 4 and 5 took their ids before 6 and commit after it; the poll that
	// reads them is past the settle time of the poll that read 6, so the
	// follower reads from 6 afterwards. The app refuses 5.
	now = now.Add(10 * time.Second)
	s.commit(4, 5, 7)
	if err := step(first); !errors.Is(err, errStop) {
		t.Fatalf("step = %v, want the app's refusal", err)
	}
	if !slices.Equal(handled, []int64{6, 4}) {
		t.Fatalf("handled %v, want 6, 4", handled)
	}

	second := newRelayRun(s, clock, *first.saved, &handled, 0)
	now = now.Add(time.Second)
	s.commit(8)
	if err := step(second); err != nil {
		t.Fatal(err)
	}
	if want := []int64{6, 4, 5, 7, 8}; !slices.Equal(handled, want) {
		t.Errorf("handled %v across the restart (saved %+v), want %v", handled, *first.saved, want)
	}
	// Once the settle time has passed, the progress saved is an id alone.
	now = now.Add(time.Minute)
	step(second)
	now = now.Add(time.Minute)
	step(second)
	if p := *second.saved; p.From != 8 || len(p.Done) != 0 {
		t.Errorf("saved %+v after the settle time, want from 8 and nothing else", p)
	}
}

// TestFollowerFromZero: a follower placed before the first event (an
// empty inbox, or listen --from 0) returns every event, in order, however
// many pages they take.
func TestFollowerFromZero(t *testing.T) {
	s := &committedStore{}
	var want []int64
	for id := int64(1); id <= 2*tailPage+3; id++ {
		s.commit(id)
		want = append(want, id)
	}
	f := &follower{store: s, settle: time.Second, now: time.Now}
	f.resume(0, nil)
	got, err := f.poll(t.Context())
	if err != nil || !slices.Equal(idsOf(got), want) {
		t.Errorf("poll = %d events (%v), want %d in order", len(got), err, len(want))
	}
}
