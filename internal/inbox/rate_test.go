package inbox_test

import (
	"slices"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// ms is a list of delays in milliseconds.
func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

// dispatch plans and takes up to n slots of s at now, leasing at most
// due deliveries, as a store's rated dispatch does.
func dispatch(l inbox.RateLimit, s inbox.Schedule, now time.Time, n, due int) ([]time.Duration, inbox.Schedule, time.Duration) {
	k, wait := l.Plan(s, now, n)
	k = min(k, due)
	if !l.Changes(s, k) {
		return nil, s, wait
	}
	slots, s := l.Take(s, now, k)
	delays := make([]time.Duration, len(slots))
	for i, slot := range slots {
		delays[i] = slot.Sub(now)
	}
	return delays, s, wait
}

func TestRateSlots(t *testing.T) {
	l := inbox.RateLimit{Rate: inbox.Rate{Events: 40, Per: time.Second}} // a slot each 25ms
	delays, s, wait := dispatch(l, inbox.Schedule{}, t0, 16, 100)
	if want := ms(0, 25, 50, 75, 100); !slices.Equal(delays, want) || wait != 25*time.Millisecond {
		t.Fatalf("an idle lane: delays %v, wait %v; want %v (100ms ahead), then 25ms", delays, wait, want)
	}
	if !s.Next.Equal(t0.Add(125 * time.Millisecond)) {
		t.Fatalf("next slot %v, want 125ms on", s.Next.Sub(t0))
	}
	// Another node, 10ms later: the schedule is full up to 110ms.
	if delays, _, wait := dispatch(l, s, t0.Add(10*time.Millisecond), 16, 100); len(delays) != 0 || wait != 15*time.Millisecond {
		t.Fatalf("a full schedule gave %v, wait %v; want none for 15ms", delays, wait)
	}
	// Late by 40ms: the slots go on from where they were, none lost.
	delays, s, _ = dispatch(l, s, t0.Add(65*time.Millisecond), 2, 100)
	if want := ms(60, 85); !slices.Equal(delays, want) {
		t.Fatalf("at 65ms: delays %v, want %v", delays, want)
	}
	// Fewer due than slots in reach: the unused slots stay free.
	delays, s, _ = dispatch(l, s, t0.Add(100*time.Millisecond), 4, 1)
	if want := ms(75); !slices.Equal(delays, want) || !s.Next.Equal(t0.Add(200*time.Millisecond)) {
		t.Fatalf("one due: delays %v, next %v; want %v, 200ms", delays, s.Next.Sub(t0), want)
	}
	// Slots another node took between the plan and the take: the
	// deliveries leased get the next ones, beyond reach.
	k, _ := l.Plan(s, t0.Add(200*time.Millisecond), 16)
	taken := s
	taken.Next = taken.Next.Add(50 * time.Millisecond)
	at := t0.Add(200 * time.Millisecond)
	if slots, _ := l.Take(taken, at, k); k != 5 || len(slots) != 5 || !slots[0].Equal(at.Add(50*time.Millisecond)) || !slots[4].Equal(at.Add(150*time.Millisecond)) {
		t.Fatalf("planned %d, then took %v after another node; want 5 from 50ms to 150ms after %v", k, slots, at)
	}
	// Idle for an hour: slots in the past are not saved up.
	if delays, _, _ := dispatch(l, s, t0.Add(time.Hour), 16, 100); !slices.Equal(delays, ms(0, 25, 50, 75, 100)) {
		t.Fatalf("after an hour idle: %v, want the next 100ms", delays)
	}
}

func TestRateHold(t *testing.T) {
	l := inbox.RateLimit{Rate: inbox.Rate{Events: 50, Per: time.Second}, Hold: t0.Add(3 * time.Second)}
	delays, s, _ := dispatch(l, inbox.Schedule{}, t0, 0, 100)
	if len(delays) != 0 || !s.Hold.Equal(l.Hold) {
		t.Fatalf("a 429's hold: delays %v, hold %v", delays, s.Hold)
	}
	l.Hold = time.Time{}
	if delays, _, wait := dispatch(l, s, t0, 4, 100); len(delays) != 0 || wait != 2900*time.Millisecond {
		t.Fatalf("a held lane gave %v, wait %v; want none for 2.9s", delays, wait)
	}
	if delays, _, _ := dispatch(l, s, t0.Add(2950*time.Millisecond), 4, 100); !slices.Equal(delays, ms(50, 70, 90)) {
		t.Fatalf("50ms before the hold ends: %v, want slots from its end", delays)
	}
	if l.Changes(s, 0) {
		t.Fatal("a dispatch that leased nothing and holds nothing changes the schedule")
	}
}

func TestRateSlow(t *testing.T) {
	l := inbox.RateLimit{Rate: inbox.Rate{Events: 6, Per: time.Minute}}
	delays, s, wait := dispatch(l, inbox.Schedule{}, t0, 4, 100)
	if !slices.Equal(delays, ms(0)) || wait != 9900*time.Millisecond {
		t.Fatalf("6/m: %v, wait %v; want one now, the next leased 100ms before its slot", delays, wait)
	}
	if delays, _, _ := dispatch(l, s, t0.Add(9*time.Second), 1, 100); len(delays) != 0 {
		t.Fatalf("6/m gave a slot after 9s: %v", delays)
	}
}
