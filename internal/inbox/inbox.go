package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookgate/hookgate/dedupe"
)

// Status is where an event stands in processing.
type Status string

// Statuses an event moves through: received -> delivering -> processed |
// dead, with retry when processing itself failed (apply, a panic) and
// received -> processed | dead when it goes to no destination. Replay puts
// events back to received.
const (
	// StatusReceived: stored, waiting for a worker.
	StatusReceived Status = "received"
	// StatusRetry: processing failed before any delivery (the store, a
	// panic); the event is leased again at NextAttemptAt.
	StatusRetry Status = "retry"
	// StatusDelivering: applied; each destination it is for has a
	// Delivery of its own, retried on that destination's schedule.
	StatusDelivering Status = "delivering"
	// StatusProcessed: applied and delivered to every destination it is for.
	StatusProcessed Status = "processed"
	// StatusDead: failed for good (invalid, or a destination refused it
	// or ran out of attempts); LastError says why and which destination.
	// Only replay revives it.
	StatusDead Status = "dead"
)

// Open reports whether events in status s still wait for processing or
// delivery.
func (s Status) Open() bool {
	return s == StatusReceived || s == StatusRetry || s == StatusDelivering
}

// ApplyOutcome is what applying an event to its entity did.
type ApplyOutcome string

// Apply outcomes. An event whose version equals the stored one is not
// older: it is applied like a newer one, in arrival order (inbox id), and
// its Applied says Tie.
const (
	// ApplyNone: the event names no entity, so nothing was applied.
	ApplyNone ApplyOutcome = "none"
	// ApplyApplied: the event was newer than the stored entity (or the
	// first for it), or a tie, and its state differs: a transition.
	ApplyApplied ApplyOutcome = "applied"
	// ApplyUnchanged: the event was newer or a tie, and the entity's
	// state is the same as before: no transition.
	ApplyUnchanged ApplyOutcome = "unchanged"
	// ApplyStale: the event's version is older than the stored one;
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
	// Tie is set when the event's version equals the stored one (its
	// Outcome is ApplyApplied or ApplyUnchanged). Ties are applied in
	// arrival order: the event wrote the entity unless one that arrived
	// after it with the same version had already written it, which then
	// keeps its state (ApplyUnchanged, From == To), as if the two had been
	// applied in arrival order.
	Tie bool
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
	// Type is the provider's name for what happened (the key's action:
	// Stripe's charge.succeeded, GitHub's push, Shopify's orders/create);
	// empty when the source does not know it.
	Type string
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
	// Via is how the event came: "" through intake (a webhook, or the
	// spool's drain), ViaReconcile when a reconciliation recovered it
	// (see Reconciliations.AcceptRecovered; Accept does not read it).
	Via string

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
	// Digest, when not zero, is the replay guard's key of the request the
	// event came in: a hash of its source and of what the request's
	// signature covers. Accept keeps it for Window; a later request with
	// the same digest is a replay, and its events are duplicates whatever
	// their keys. Items that share a digest are one request's events.
	Digest dedupe.Hash
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

// Filter selects events for List. Zero fields match everything; the
// fields that are set must all match.
type Filter struct {
	Source string
	Tenant string
	Status Status
	// EventID keeps the events with this provider event id.
	EventID string
	// Hash keeps the events stored under this key (one per dedupe
	// window: the same key may come again once its window has passed).
	Hash dedupe.Hash
	// Since keeps the events received at or after it, Until those
	// received before it. With either set (and no AfterID), the events
	// come newest first by the time they were received, then by id, so
	// that a page of a long range is read in index order, not sorted.
	Since, Until time.Time
	// Outcome keeps the events whose recorded apply outcome is Outcome;
	// ApplyPending keeps the events not applied yet (Applied nil),
	// ApplyTie the ties (Applied.Tie).
	Outcome ApplyOutcome
	// BeforeID pages backwards: only events with a smaller id.
	BeforeID int64
	// AfterID pages forwards: only events with a larger id, and of those
	// the Limit oldest (still returned newest first), so that a reader
	// following new events (a tail) with AfterID set to the largest id
	// it has seen skips none.
	AfterID int64
	// Limit caps the result; zero means DefaultLimit.
	Limit int
}

// Filter.Outcome values that no Applied record carries: ApplyPending
// keeps the events not applied yet, ApplyTie the events applied as a tie
// (Applied.Tie), whatever their outcome.
const (
	ApplyPending ApplyOutcome = "pending"
	ApplyTie     ApplyOutcome = "tie"
)

// DefaultLimit is the page size of List when Filter.Limit is zero.
const DefaultLimit = 100

// DeliveryStatus is where one (event, destination) delivery stands.
type DeliveryStatus string

// Delivery statuses.
const (
	// DeliveryPending: not delivered yet; due at NextAttemptAt.
	DeliveryPending DeliveryStatus = "pending"
	// DeliveryDelivered: the destination took the event.
	DeliveryDelivered DeliveryStatus = "delivered"
	// DeliveryFailed: failed for good (refused, or out of attempts).
	DeliveryFailed DeliveryStatus = "failed"
)

// Lane is one destination of one source: deliveries are leased, paced and
// paused per lane.
type Lane struct {
	Source, Destination string
}

// Delivery is the record of delivering one event to one destination.
type Delivery struct {
	EventID     int64
	Destination string
	Status      DeliveryStatus
	// Attempts counts attempts since the event was last replayed.
	Attempts int
	// NextAttemptAt is when a pending delivery is due.
	NextAttemptAt time.Time
	// Code is the HTTP status of the last attempt; 0 when none came back.
	Code  int
	Error string
	// At is when the last attempt was made; zero before the first.
	At time.Time
	// OrderKey is the key of a delivery to a destination with order:
	// entity ("" for any other): the deliveries of one key go one at a
	// time, in entity version order, then inbox id.
	OrderKey string
	// Sequence is an ordered delivery's position in its key: 1 for the
	// key's first delivery to the destination, then one more for each
	// delivery taken as its key's head. It is given when the delivery is
	// first leased and kept through its retries; 0 until then, and for an
	// unordered delivery.
	Sequence int64
	// Skipped counts the deliveries of the key that failed for good and
	// were passed over (on_exhausted: skip) just before this one.
	Skipped int
}

// Attempt is one try to deliver an event to a destination, as the attempt
// log keeps it. The log survives replay and is swept with its event.
type Attempt struct {
	EventID     int64
	Destination string
	At          time.Time
	Duration    time.Duration
	// Code is the HTTP status; 0 when none came back.
	Code  int
	Error string
	// Body is the start of the response body, as text.
	Body string
}

// Task is a leased delivery: the event and where its delivery stands.
type Task struct {
	Event    Event
	Delivery Delivery
	// Slot, in a rated lane (RatedDispatcher), is when the delivery is
	// to be made: its slot in the lane's schedule, on the store's clock
	// (the database's, which every node shares). It is a time, not a
	// wait from when the dispatch answered: how long a dispatch takes to
	// answer differs by node and by dispatch, and waits counted from
	// its answer would bunch one node's deliveries with another's.
	Slot time.Time
}

// Done is the end of one attempt, to record.
type Done struct {
	Attempt Attempt
	// Status is DeliveryDelivered, DeliveryFailed (for good), or
	// DeliveryPending to try again at NextAttemptAt.
	Status        DeliveryStatus
	NextAttemptAt time.Time
	// Block, for an ordered delivery that failed for good, holds its key
	// (on_exhausted: block): no later delivery of the key is leased until
	// the event is replayed or the key is skipped (OrderSkipper). Without
	// it the key moves on, and its next delivery counts the skip.
	Block bool
}

// Settled is an event whose last open delivery ended.
type Settled struct {
	ID     int64
	Source string
	// Status is StatusProcessed or StatusDead; Error names each
	// destination that failed for good and why.
	Status Status
	Error  string
}

// Dispatched is what one Dispatch did.
type Dispatched struct {
	// Tasks are the deliveries leased.
	Tasks []Task
	// Settled are the events finished by the recorded attempts.
	Settled []Settled
	// Lost are the events of recorded attempts whose delivery this owner
	// no longer held (its lease expired and someone else took it, or it
	// was replayed): their attempt is logged, their state is not changed.
	Lost []int64
	// Wait, from a rated dispatch (RatedDispatcher) that leased fewer
	// than asked because the lane's schedule is full, is how long until
	// it leases another.
	Wait time.Duration
}

// LaneState is the health of one lane, as processing last saw it.
type LaneState struct {
	Lane
	// State is LaneHealthy, LaneFailing or LanePaused.
	State string
	// Failures counts consecutive failed attempts.
	Failures int
	// Until is when a paused lane is probed again.
	Until     time.Time
	LastError string
	Changed   time.Time
	// Pending counts the lane's deliveries not yet delivered or failed
	// (filled in by Stats).
	Pending int
	// Held is set while an operator holds the lane (see LaneHolder):
	// whatever State says, none of its deliveries is leased. The circuit
	// never sets or clears it.
	Held bool
	// Blocked counts the keys of an ordered lane (order: entity,
	// on_exhausted: block) that wait for an operator: a delivery failed
	// for good, and the key's later deliveries are not made until its
	// event is replayed or the key is skipped.
	Blocked int
}

// Lane states.
const (
	LaneHealthy = "healthy"
	LaneFailing = "failing"
	LanePaused  = "paused"
)

// Result is how one processing attempt of an event ended.
type Result struct {
	ID int64
	// Status is StatusProcessed, StatusRetry or StatusDead.
	Status Status
	// NextAttemptAt is when a StatusRetry event is due again.
	NextAttemptAt time.Time
	// Error is the reason of a retry or a death; "" for processed.
	Error string
	// Destinations are where a processed event goes. With any, the event
	// becomes StatusDelivering and each gets a pending Delivery (one
	// already delivered stays delivered); it is StatusProcessed once all
	// are delivered, StatusDead once one failed for good and none is
	// pending.
	Destinations []string
	// OrderKeys are the keys of the event's deliveries to destinations
	// with order: entity, by destination name (each one of Destinations).
	// Such a delivery is leased only as the head of its key: the key's
	// pending delivery of the lowest entity version (EntityOrder), then
	// inbox id, while none of the key's deliveries is in flight.
	OrderKeys map[string]string
}

// ReplayFilter selects the events Replay puts back. Zero fields match
// everything; Dead limits it to dead events; IDs, when set, limit it to
// those events.
type ReplayFilter struct {
	Dead   bool
	Source string
	Tenant string
	Since  time.Time
	IDs    []int64
	// Redeliver clears the delivered records too, so that every
	// destination (only Destination, when set) is called again.
	Redeliver   bool
	Destination string
	// FailedTo, when set, limits the replay to the events whose delivery
	// to the destination of this name failed for good; with Dead, the
	// events it made dead. Their failed deliveries start over.
	FailedTo string
	// PageSize is how many events one transaction replays; zero means
	// DefaultLimit.
	PageSize int
}

// SweepResult counts what Sweep removed.
type SweepResult struct {
	Keys   int
	Events int
	// Digests counts expired replay guard digests.
	Digests int
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
	// Pending counts open events: received, in retry or delivering.
	Pending int
	// OldestPending is when the oldest pending event was received; zero
	// when none is pending.
	OldestPending time.Time
	// Lanes are the lanes processing has recorded a state for, or that
	// have pending deliveries, by source then destination.
	Lanes []LaneState
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

// ErrNotOwner is matched by the error of Finish when some results were
// for events the owner no longer leased; the others were recorded.
var ErrNotOwner = errors.New("inbox: lease not held")

// LostError is the error of Finish for results whose lease was lost.
type LostError struct{ IDs []int64 }

func (e *LostError) Error() string {
	return fmt.Sprintf("inbox: %d results for events no longer leased: %v", len(e.IDs), e.IDs)
}

// Is makes errors.Is(err, ErrNotOwner) true.
func (e *LostError) Is(target error) bool { return target == ErrNotOwner }

// Lost is what Finish returns when its results for ids changed nothing:
// a *LostError naming them, or nil when there are none.
func Lost(ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	return &LostError{IDs: ids}
}

// EventIDs are the ids of events, in their order.
func EventIDs(events []Event) []int64 {
	ids := make([]int64, len(events))
	for i := range events {
		ids[i] = events[i].ID
	}
	return ids
}

// Backend is an opened inbox: its Store, and what the gateway needs of the
// database behind it. internal/backend opens one from the database
// setting; nothing above this package names a backend's type.
type Backend interface {
	Store
	// Ping reports whether the database answers; readiness asks it (and,
	// after a failed write, a WriteChecker).
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}

// LaneHolder is implemented by backends in which an operator can hold a
// lane: stop its deliveries until released, on every node at once.
type LaneHolder interface {
	// HoldLane holds the lane (held true) or releases it. While it is
	// held, Dispatch leases none of its deliveries; attempts leased
	// before still end and are recorded. The hold is stored, so it
	// outlasts restarts, and Stats reports it (LaneState.Held).
	HoldLane(ctx context.Context, lane Lane, held bool) error
}

// AttemptLog is implemented by backends that read the attempt log by
// destination.
type AttemptLog interface {
	// RecentAttempts returns up to limit of the newest attempts to the
	// destinations of this name (of every source), newest first.
	RecentAttempts(ctx context.Context, destination string, limit int) ([]Attempt, error)
}

// Activity is what happened in one interval of time, as the stored rows
// tell it.
type Activity struct {
	// Start is when the interval starts; it lasts the step asked for.
	Start time.Time
	// Received counts the stored events received in the interval.
	Received int64
	// Duplicates counts the deliveries answered as duplicates in it.
	Duplicates int64
	// Processed counts the events whose processing ended in it and that
	// stand processed; Dead the events that died in it and stand dead.
	Processed, Dead int64
}

// ActivityKept is how long a backend keeps the duplicates it counts by
// minute; Sweep removes older counts. Received, processed and dead events
// are counted from the events themselves, as long as they are kept.
const ActivityKept = 48 * time.Hour

// ActivityReader is implemented by backends that count what happened over
// time from their rows: events by the time they were received, processed
// or died, and duplicates from counts kept by minute.
type ActivityReader interface {
	// Activity returns, oldest first, the intervals of length step (a
	// whole number of minutes) from since until until (the zero time:
	// now) in which anything happened. Intervals start at multiples of
	// step since the Unix epoch, so since is rounded down to one; what
	// happened at until or later is not counted, so an until that is not
	// a multiple of step leaves its interval partly counted.
	Activity(ctx context.Context, since, until time.Time, step time.Duration) ([]Activity, error)
}

// ErrBadStep is returned by Activity for a step that is not a positive
// whole number of minutes.
var ErrBadStep = errors.New("inbox: activity step must be a positive whole number of minutes")

// Store is a durable inbox. Implementations are safe for concurrent use.
type Store interface {
	// Accept claims the items' keys, stores the new events and commits the
	// keys, all in one transaction, and reports one outcome per item in
	// order. Items must carry distinct hashes. Items with a Digest are
	// first checked against the digests kept: when their request's digest
	// is already kept (and not expired) they are Duplicate, with the
	// digest's first-seen time, and their keys are not claimed; otherwise
	// the digest is kept for the item's Window. A batch holds at most one
	// request per digest. On error nothing was written and no key or
	// digest was kept.
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
	// (tenant, type, id) is upserted when the event's EntityOrder is
	// greater than the stored one, or equal to it (a tie) and the event
	// arrived after the one that wrote it (a larger id), and the result is
	// recorded on the event.
	Apply(ctx context.Context, events []Event) ([]Applied, error)
	// Deliveries returns the recorded deliveries of the given events, by
	// event id, then by destination name.
	Deliveries(ctx context.Context, ids []int64) (map[int64]map[string]Delivery, error)
	// Dispatch records the attempts in done, then leases up to n due
	// deliveries of lane for owner until now+d, all in one transaction.
	// Each recorded attempt is logged; one whose delivery owner still
	// leases updates it (Attempts incremented, the lease released) and,
	// when it was the event's last open delivery, settles the event. Due
	// deliveries are pending ones whose NextAttemptAt has passed and that
	// nobody holds, soonest due first.
	Dispatch(ctx context.Context, owner string, lane Lane, done []Done, n int, d time.Duration) (Dispatched, error)
	// Attempts returns the attempt log of an event, oldest first.
	Attempts(ctx context.Context, id int64) ([]Attempt, error)
	// SetLaneState records a lane's state.
	SetLaneState(ctx context.Context, st LaneState) error
	// Finish records the end of a processing attempt and releases the
	// lease. Results for events whose lease owner is no longer owner
	// change nothing (another worker took them over); the others are
	// recorded and the error is a *LostError naming the lost ones.
	Finish(ctx context.Context, owner string, results []Result) error
	// Replay puts the events matching f back to received, page by page
	// (progress is called after each page with the running count), and
	// returns how many it replayed. Events held by a lease, or with a
	// delivery under lease, are skipped. Recorded Applied results are
	// kept, so the end state does not change; deliveries that did not
	// succeed start over, and with f.Redeliver delivered ones too.
	Replay(ctx context.Context, f ReplayFilter, progress func(done int)) (int, error)
	// Sweep removes expired dedupe keys and replay guard digests, and
	// processed events whose ProcessedAt is before processedBefore, with
	// their deliveries and attempt logs.
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
