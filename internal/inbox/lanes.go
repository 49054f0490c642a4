package inbox

import (
	"cmp"
	"slices"
)

// LaneStates merges what a backend reads about lanes (their recorded
// state, their pending deliveries) into one LaneState per lane, for
// Stats.
type LaneStates map[Lane]*LaneState

// Get returns l's state, a healthy one with nothing recorded when l has
// none yet.
func (m LaneStates) Get(l Lane) *LaneState {
	st := m[l]
	if st == nil {
		st = &LaneState{Lane: l, State: LaneHealthy}
		m[l] = st
	}
	return st
}

// Sorted returns the states by source, then destination.
func (m LaneStates) Sorted() []LaneState {
	out := make([]LaneState, 0, len(m))
	for _, st := range m {
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b LaneState) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Destination, b.Destination))
	})
	return out
}
