package inbox

import (
	"context"
	"time"
)

// The optional capabilities of a backend, beside Store: callers find them
// with a type assertion, and a wrapper of a store (the spool's fallback)
// forwards them by these names. Incidents (incident.go), LaneHolder,
// AttemptLog and ActivityReader (inbox.go) and RatedDispatcher (rate.go)
// are the others.

// Leader is implemented by backends that several nodes share: the node
// that holds the lead runs the periodic sweep, the others skip it. A
// backend of one node (SQLite) does not implement it, and always sweeps.
type Leader interface {
	// Lead reports whether this node holds the lead, taking it when
	// nobody does. A node that dies or loses its connection gives it up,
	// and another node's next Lead takes it.
	Lead(ctx context.Context) (bool, error)
}

// WriteChecker is implemented by backends that can show a write would
// succeed now: readiness asks it while the last write to the store failed,
// so that a node whose database came back is ready again before any event
// is sent to it.
type WriteChecker interface {
	// CheckWrite writes and commits a row of the backend's own.
	CheckWrite(ctx context.Context) error
}

// Watcher is implemented by backends that several nodes share, so that a
// node's workers wake when any node stores new events rather than at their
// next poll.
type Watcher interface {
	// Watch calls wake soon after new events are committed, by this node
	// or another, until ctx ends; for a batch that this node's Accept
	// (or AcceptRecovered) stored it calls wake once, before that
	// returns, so its caller need not wake the workers itself. A
	// notification may be lost (a dropped connection); wake is then
	// called when watching resumes, and the workers' poll remains the
	// fallback. Watch returns when ctx ends.
	Watch(ctx context.Context, wake func()) error
}

// DuplicateCounter is implemented by backends that count duplicates they
// did not see: the ones intake answered from its memory of recent keys or
// from the Redis front, so that the store's duplicate counts (stats,
// /api/stats) include them. Intake adds them up and hands them over at
// most once a second, and when it closes.
type DuplicateCounter interface {
	CountDuplicates(ctx context.Context, bySource map[string]int64) error
}

// ParallelAcceptor is implemented by backends that take several Accept
// batches at once to advantage (a client-server database, where one
// batch's round trip and commit can overlap another's): intake runs
// AcceptWriters writers. A backend without it gets one, which is what a
// single-writer engine such as SQLite can use.
type ParallelAcceptor interface {
	AcceptWriters() int
}

// ApplyFinisher is implemented by backends that apply a batch and record
// its results in one write transaction: a batch then costs one commit
// instead of two, and on PostgreSQL one new version of each event's row.
type ApplyFinisher interface {
	// ApplyFinish applies events as Apply does, calls decide with their
	// results in the order of events, and finishes the results decide
	// returns as Finish does (they may name other events owner holds).
	// When applying or decide fails, nothing is recorded and the error is
	// returned; results for events owner no longer holds are not
	// recorded, as with Finish, and the error is a *LostError naming them
	// (their Apply results are recorded all the same).
	ApplyFinish(ctx context.Context, owner string, events []Event, decide func([]Applied) ([]Result, error)) error
}

// Results calls decide, an ApplyFinish's, with applied, and checks the
// results it returns for owner. Its errors are the caller's.
func Results(owner string, applied []Applied, decide func([]Applied) ([]Result, error)) ([]Result, error) {
	results, err := decide(applied)
	if err == nil {
		err = CheckFinish(owner, results)
	}
	if err != nil {
		return nil, CallerError{Err: err}
	}
	return results, nil
}

// OrderedDispatcher is implemented by backends that deliver per-key
// order (order: entity on a destination). Every node's dispatcher of an
// ordered lane calls it instead of Store.Dispatch.
type OrderedDispatcher interface {
	// DispatchOrdered is Dispatch for an ordered lane: it records done as
	// Dispatch does (releasing each ordered delivery's key, counting a
	// skip or holding the key for a Done with Block), then leases up to n
	// deliveries, each the head of its key: the key's pending delivery
	// with the lowest EntityOrder, then inbox id, when it is due, none of
	// the key's deliveries is in flight and the key is not blocked. At
	// most one delivery per key is leased at a time, on all nodes
	// together; a lease that expires (its node died) frees the key. A
	// delivery leased for the first time gets the key's next Sequence
	// and the count of skips before it.
	DispatchOrdered(ctx context.Context, owner string, lane Lane, done []Done, n int, d time.Duration) (Dispatched, error)
}

// OrderSkipper is implemented by backends in which an operator can skip
// a blocked key of an ordered lane.
type OrderSkipper interface {
	// SkipKey unblocks key in lane: its failed delivery stays failed (the
	// event dead) and counts as skipped, and the key's next delivery is
	// made. It reports whether the key was blocked.
	SkipKey(ctx context.Context, lane Lane, key string) (bool, error)
	// BlockedKeys lists up to limit blocked keys of lane, by key, each
	// with the event whose delivery blocks it.
	BlockedKeys(ctx context.Context, lane Lane, limit int) ([]BlockedKey, error)
}

// BlockedKey is a key of an ordered lane held by a delivery that failed
// for good (on_exhausted: block).
type BlockedKey struct {
	Key string
	// EventID is the inbox id of the event whose delivery failed.
	EventID int64
}
