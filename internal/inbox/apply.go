package inbox

import (
	"cmp"
	"fmt"
	"slices"
)

// The version guard, as both backends run it: a backend reads the stored
// events' entity fields (ApplyRow) and the heads of their entities (Head),
// runs [DecideAll] in memory, then writes the heads it moved on and
// records each result.

// EntityKey names one entity.
type EntityKey struct{ Tenant, Type, ID string }

// ApplyRow is what Apply reads of a stored event: its entity fields and
// the result recorded by an earlier Apply (nil before the first).
type ApplyRow struct {
	Key      EntityKey
	Version  string
	Order    int64
	State    string
	Recorded *Applied
}

// Head is an entity as the version guard compares against it: the stored
// version, order and state, the event that wrote them, and whether Apply
// moved it on (Dirty: to be written back).
type Head struct {
	Found, Dirty bool
	Version      string
	Order        int64
	State        string
	Event        int64
}

// HeadsToRead returns an empty head for each entity of rows that an
// unrecorded event names: the heads a backend reads before DecideAll.
// It fails with ErrNotFound when ids names an event rows lacks.
func HeadsToRead(ids []int64, rows map[int64]*ApplyRow) (map[EntityKey]*Head, error) {
	heads := map[EntityKey]*Head{}
	for _, id := range ids {
		r, ok := rows[id]
		if !ok {
			return nil, fmt.Errorf("%w: %d", ErrNotFound, id)
		}
		if r.Recorded == nil && r.Key.ID != "" {
			heads[r.Key] = &Head{}
		}
	}
	return heads, nil
}

// DecideAll runs the version guard for the events ids, in id order,
// against heads (filled in by the backend), moving each head on as its
// events are applied; record is called with each new result, in id order.
// It returns the results in the order of ids: the recorded one for an
// event applied before.
func DecideAll(ids []int64, rows map[int64]*ApplyRow, heads map[EntityKey]*Head, record func(id int64, a Applied)) []Applied {
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ids[a], ids[b]) })
	out := make([]Applied, len(ids))
	for _, i := range order {
		r := rows[ids[i]]
		if r.Recorded == nil {
			var head *Head
			if r.Key.ID != "" {
				head = heads[r.Key]
			}
			res := Decide(ids[i], r, head)
			r.Recorded = &res
			record(ids[i], res)
		}
		out[i] = *r.Recorded
	}
	return out
}

// Decide runs the version guard for event id against head (nil for an
// event without entity) and moves head on when the event is newer or a
// tie. Only a strictly older version is stale; an equal one is a tie,
// applied in arrival order: it moves head on unless an event that arrived
// after it (a larger id) with the same version already has, whose state
// then stands, as if the two had been applied in id order.
func Decide(id int64, r *ApplyRow, head *Head) Applied {
	if head == nil {
		return Applied{Outcome: ApplyNone}
	}
	tie := head.Found && r.Order == head.Order
	if head.Found && r.Order < head.Order {
		return Applied{Outcome: ApplyStale, From: head.State, To: head.State}
	}
	if tie && id < head.Event {
		return Applied{Outcome: ApplyUnchanged, From: head.State, To: head.State, Tie: true}
	}
	res := Applied{Outcome: ApplyUnchanged, From: head.State, To: r.State, Tie: tie}
	if head.State != r.State {
		res.Outcome, res.Transition = ApplyApplied, true
	}
	*head = Head{Found: true, Dirty: true, Version: r.Version, Order: r.Order, State: r.State, Event: id}
	return res
}
