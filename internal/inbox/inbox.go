package inbox

import (
	"context"
	"errors"
	"time"

	"github.com/hookgate/hookgate/dedupe"
)

// Status is where an event stands in processing.
type Status string

// Statuses an event moves through.
const (
	StatusReceived Status = "received"
)

// Event is one stored delivery.
type Event struct {
	ID       int64
	Hash     dedupe.Hash
	Scope    string
	Source   string
	Provider string
	Tenant   string
	EventID  string
	// Entity fields are empty when the source does not know them.
	EntityType    string
	EntityID      string
	EntityVersion string
	EntityOrder   int64
	EntityState   string
	Payload       []byte
	Headers       map[string]string
	ReceivedAt    time.Time
	Status        Status
}

// Item is one event offered to Accept, with the dedupe window of its source.
type Item struct {
	Event  Event
	Window time.Duration
}

// Outcome is what Accept did with one item.
type Outcome struct {
	Status dedupe.Status
	// ID of the stored event when Status is New.
	ID int64
	// FirstSeen and Expires as reported by the dedupe claim.
	FirstSeen time.Time
	Expires   time.Time
}

// Filter selects events for List. Zero fields match everything.
type Filter struct {
	Source string
	Tenant string
	Status Status
	// BeforeID pages backwards: only events with a smaller id.
	BeforeID int64
	// Limit caps the result; zero means DefaultLimit.
	Limit int
}

// DefaultLimit is the page size of List when Filter.Limit is zero.
const DefaultLimit = 100

// ErrNotFound is returned by Get for an unknown id.
var ErrNotFound = errors.New("inbox: event not found")

// Store is a durable inbox. Implementations are safe for concurrent use.
type Store interface {
	// Accept claims the items' keys, stores the new events and commits the
	// keys, all in one transaction, and reports one outcome per item in
	// order. Items must carry distinct hashes. On error nothing was
	// written and no key was kept.
	Accept(ctx context.Context, items []Item) ([]Outcome, error)
	// Get returns one event.
	Get(ctx context.Context, id int64) (Event, error)
	// List returns events matching f, newest first.
	List(ctx context.Context, f Filter) ([]Event, error)
	// InitSetting stores value under name unless a value is already
	// there, and returns the stored one: the first writer wins, so
	// concurrent first starts agree on one value.
	InitSetting(ctx context.Context, name, value string) (string, error)
}
