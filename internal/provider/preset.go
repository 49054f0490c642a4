package provider

import "strings"

// Body is how a provider's request body is split into events.
type Body int

const (
	// BodyRaw is one event; the body is not parsed.
	BodyRaw Body = iota
	// BodyJSON is one event; the body must be JSON.
	BodyJSON
	// BodyJSONArray is a JSON array, one event per element.
	BodyJSONArray
	// BodySOAP is an outbound message: one event per Notification, whose
	// selectors read XML.
	BodySOAP
)

// Preset is where a provider's deliveries carry the event id, scope,
// tenant and entity fields, and which headers later stages need.
type Preset struct {
	// Body is how the body is split into events.
	Body Body
	// Key are the event id's parts; none: a source must configure them.
	Key []Selector
	// Scope is the object type and action; a zero Selector for none.
	Scope [2]Selector
	// Tenant is the tenant; a zero Selector for none.
	Tenant Selector
	// Entity are the entity's fields; a zero Selector for none.
	Entity EntitySelectors
	// Headers are headers kept with each event (canonical names).
	Headers []string
}

// EntitySelectors select the fields of the entity an event is about.
type EntitySelectors struct {
	Type, ID, Version, State Selector
}

// Selector is one field of a preset: a selector in configuration syntax
// ("json:id", "header:X-GitHub-Delivery"), or Derived when the value is
// computed in a way the syntax cannot say. The zero Selector selects
// nothing.
type Selector struct {
	// Syntax is the selector in configuration syntax; "" when Derived.
	Syntax string
	// Derived computes the value; nil when Syntax.
	Derived *Derived
}

// IsZero reports whether s selects nothing.
func (s Selector) IsZero() bool { return s.Syntax == "" && s.Derived == nil }

// Reads is every selector, in configuration syntax, whose value s reads.
func (s Selector) Reads() []string {
	switch {
	case s.Derived != nil:
		return s.Derived.Reads
	case s.Syntax != "":
		return []string{s.Syntax}
	}
	return nil
}

// Field is the preset selector sel, in configuration syntax.
func Field(sel string) Selector { return Selector{Syntax: sel} }

// Derived is a preset's selector that computes its value from other
// selectors' values.
type Derived struct {
	// Desc is how the console and error messages name it.
	Desc string
	// Reads are the selectors, in configuration syntax, that Value may
	// read, at least one: the body fields a source must keep and check,
	// and (the first one) where the value comes from.
	Reads []string
	// Value computes the value; an error wraps [ErrMissing] when it is
	// absent or empty.
	Value func(e Event) (string, error)
}

// Event is what a derived selector reads of one event.
type Event interface {
	// Read returns the value of one of the selector's Reads, as a
	// configured selector would read it: an error wrapping
	// [ErrMissing] when absent or empty.
	Read(sel string) (string, error)
}

// before returns s up to the first sep, or all of s.
func before(s, sep string) string {
	head, _, _ := strings.Cut(s, sep)
	return head
}

// nonEmpty returns s, or [ErrMissing] when it is empty.
func nonEmpty(s string) (string, error) {
	if s == "" {
		return "", ErrMissing
	}
	return s, nil
}
