package inbox

import (
	"time"

	"github.com/hookgate/hookgate/dedupe"
)

// Condition is one test a Filter makes: a column and an operator ("id <"),
// and the value the backend binds after it.
type Condition struct {
	Test string
	Arg  any
}

// Conditions are f's tests of an event row, all of which must hold; at
// turns a time into the value the backend stores. Every backend's List
// builds its WHERE clause from them, each with its own placeholders.
func (f Filter) Conditions(at func(time.Time) any) []Condition {
	var cs []Condition
	add := func(test string, v any) { cs = append(cs, Condition{test, v}) }
	if f.Source != "" {
		add("source =", f.Source)
	}
	if f.Tenant != "" {
		add("tenant =", f.Tenant)
	}
	if f.Status != "" {
		add("status =", string(f.Status))
	}
	if f.EventID != "" {
		add("event_id =", f.EventID)
	}
	if f.Hash != (dedupe.Hash{}) {
		add("hash =", f.Hash[:])
	}
	if !f.Since.IsZero() {
		add("received_at >=", at(f.Since))
	}
	if !f.Until.IsZero() {
		add("received_at <", at(f.Until))
	}
	switch f.Outcome {
	case "":
	case ApplyPending:
		add("apply_outcome =", "")
	case ApplyTie:
		add("apply_tie =", true)
	default:
		add("apply_outcome =", string(f.Outcome))
	}
	if f.BeforeID > 0 {
		add("id <", f.BeforeID)
	}
	if f.AfterID > 0 {
		add("id >", f.AfterID)
	}
	return cs
}

// Conditions are f's tests of an event row but for its ids and its
// destination (FailedTo), which each backend writes with its own tables:
// what Replay's WHERE clause is built from, as List's is from a Filter's.
func (f ReplayFilter) Conditions(at func(time.Time) any) []Condition {
	var cs []Condition
	add := func(test string, v any) { cs = append(cs, Condition{test, v}) }
	if f.Dead {
		add("status =", string(StatusDead))
	}
	if f.Source != "" {
		add("source =", f.Source)
	}
	if f.Tenant != "" {
		add("tenant =", f.Tenant)
	}
	if !f.Since.IsZero() {
		add("received_at >=", at(f.Since))
	}
	return cs
}

// PageSize is f.Limit, or DefaultLimit when it is zero.
func (f Filter) PageSize() int {
	if f.Limit <= 0 {
		return DefaultLimit
	}
	return f.Limit
}
