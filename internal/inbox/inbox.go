package inbox

import (
	"context"
	"errors"
	"time"

	"github.com/hookgate/hookgate/dedupe"
)

// Status is where an event stands in processing.
type Status string

// Statuses an event moves through: received -> processed, or -> retry ->
// ... -> processed | dead. Replay puts processed and dead events back to
// received.
const (
	// StatusReceived: stored, waiting for a worker.
	StatusReceived Status = "received"
	// StatusRetry: a delivery failed and is retried at NextAttemptAt.
	StatusRetry Status = "retry"
	// StatusProcessed: applied and delivered to every destination it is for.
	StatusProcessed Status = "processed"
	// StatusDead: failed for good (invalid, a permanent delivery error, or
	// out of attempts); LastError says why. Only replay revives it.
	StatusDead Status = "dead"
)

// ApplyOutcome is what applying an event to its entity did.
type ApplyOutcome string

// Apply outcomes.
const (
	// ApplyNone: the event names no entity, so nothing was applied.
	ApplyNone ApplyOutcome = "none"
	// ApplyApplied: the event was newer than the stored entity (or the
	// first for it) and its state differs: a transition.
	ApplyApplied ApplyOutcome = "applied"
	// ApplyUnchanged: the event was newer and was written, but the state
	// is the same as before: no transition.
	ApplyUnchanged ApplyOutcome = "unchanged"
	// ApplyStale: the event's version is not newer than the stored one;
	// nothing changed and no side effect fires.
	ApplyStale ApplyOutcome = "stale"
)

// Applied is the recorded result of applying one event. It is written the
// first time the event is applied and returned unchanged afterwards, so a
// re-run (after a crash, or a replay) sees the same outcome and transition.
type Applied struct {
	Outcome ApplyOutcome
	// From and To are the entity's state before and after ("" for a new
	// entity's From). Transition is Outcome == ApplyApplied with From != To.
	From, To   string
	Transition bool
}

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

	// Processing record.
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	ProcessedAt   time.Time
	// Applied is nil until the event has been applied.
	Applied *Applied
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

// DeliveryStatus is where one (event, destination) delivery stands.
type DeliveryStatus string

// Delivery statuses.
const (
	DeliveryDelivered DeliveryStatus = "delivered"
	// DeliveryFailed: the last attempt failed; the event may retry.
	DeliveryFailed DeliveryStatus = "failed"
)

// Delivery is the record of delivering one event to one destination.
type Delivery struct {
	EventID     int64
	Destination string
	Status      DeliveryStatus
	// Attempts counts attempts since the event was last replayed.
	Attempts int
	// Code is the HTTP status of the last attempt; 0 when none came back.
	Code  int
	Error string
	At    time.Time
}

// Result is how one processing attempt of an event ended.
type Result struct {
	ID int64
	// Status is StatusProcessed, StatusRetry or StatusDead.
	Status Status
	// NextAttemptAt is when a StatusRetry event is due again.
	NextAttemptAt time.Time
	// Error is the reason of a retry or a death; "" for processed.
	Error string
}

// ReplayFilter selects the events Replay puts back. Zero fields match
// everything; Dead limits it to dead events; IDs, when set, limit it to
// those events.
type ReplayFilter struct {
	Dead      bool
	Source    string
	Tenant    string
	Since     time.Time
	IDs       []int64
	Redeliver bool
	// PageSize is how many events one transaction replays; zero means
	// DefaultLimit.
	PageSize int
}

// SweepResult counts what Sweep removed.
type SweepResult struct {
	Keys   int
	Events int
}

// SourceStats are one source's counts.
type SourceStats struct {
	// ByStatus counts stored events by status.
	ByStatus map[Status]int
	// Accepted and Duplicates count intake outcomes since the store was
	// created (they survive restarts and sweeps).
	Accepted   int64
	Duplicates int64
}

// Stats describe the inbox.
type Stats struct {
	Sources map[string]SourceStats
	// Pending counts events received or in retry.
	Pending int
	// OldestPending is when the oldest pending event was received; zero
	// when none is pending.
	OldestPending time.Time
}

// Entity is the state the inbox holds for one entity.
type Entity struct {
	Tenant, Type, ID string
	Version          string
	Order            int64
	State            string
	// EventID is the inbox id of the event that last wrote it.
	EventID   int64
	UpdatedAt time.Time
}

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
	// Lease takes up to n due events for owner until now+d and returns
	// them in id order: events received, or in retry whose NextAttemptAt
	// has passed, that no one else holds (a lease that expired, e.g. its
	// worker crashed, makes them due again). Attempts is incremented.
	Lease(ctx context.Context, owner string, n int, d time.Duration) ([]Event, error)
	// Apply applies the events' entities in one transaction, in id order,
	// and returns one Applied per event. An event already applied returns
	// its recorded result and changes nothing; otherwise the entity
	// (tenant, type, id) is upserted only when the event's EntityOrder is
	// greater than the stored one, and the result is recorded on the event.
	Apply(ctx context.Context, events []Event) ([]Applied, error)
	// Deliveries returns the recorded deliveries of the given events, by
	// event id, then by destination name.
	Deliveries(ctx context.Context, ids []int64) (map[int64]map[string]Delivery, error)
	// RecordDelivery records one attempt to deliver an event to a
	// destination: Attempts is incremented and the other fields replaced.
	RecordDelivery(ctx context.Context, d Delivery) error
	// Finish records the end of a processing attempt and releases the
	// lease. Results for events whose lease owner is no longer owner are
	// ignored (another worker took them over).
	Finish(ctx context.Context, owner string, results []Result) error
	// Replay puts the events matching f back to received, page by page
	// (progress is called after each page with the running count), and
	// returns how many it replayed. Recorded Applied results are kept, so
	// the end state does not change; with f.Redeliver the delivery records
	// are cleared so that every destination is called again.
	Replay(ctx context.Context, f ReplayFilter, progress func(done int)) (int, error)
	// Sweep removes expired dedupe keys and processed events whose
	// ProcessedAt is before processedBefore, with their delivery records.
	Sweep(ctx context.Context, processedBefore time.Time) (SweepResult, error)
	// Stats counts events by source and status, and reports intake counters
	// and the oldest event waiting to be processed.
	Stats(ctx context.Context) (Stats, error)
	// Entity returns the stored entity, or ErrNotFound.
	Entity(ctx context.Context, tenant, typ, id string) (Entity, error)
	// InitSetting stores value under name unless a value is already
	// there, and returns the stored one: the first writer wins, so
	// concurrent first starts agree on one value.
	InitSetting(ctx context.Context, name, value string) (string, error)
}
