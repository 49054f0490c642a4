package inbox

import (
	"context"
	"time"
)

// Incident is a condition of the gateway that someone should hear about
// (a destination failing, a source gone silent), from when it was seen
// until it ended. Its key is Kind, Source and Destination: at most one
// incident of a key is open at a time, on every node sharing the store.
type Incident struct {
	ID          int64
	Kind        string
	Source      string
	Destination string
	OpenedAt    time.Time
	// ResolvedAt is when it ended; zero while it is open.
	ResolvedAt time.Time
	// SeenAt is when a node last saw its condition hold.
	SeenAt time.Time
	// RemindedAt is when the last reminder was queued; zero before the
	// first.
	RemindedAt time.Time
	// Counts are what the condition counted (failed attempts, dead
	// events, refused requests), as last seen or as at its end.
	Counts    map[string]int64
	LastError string
}

// Open reports whether the incident has not ended.
func (i Incident) Open() bool { return i.ResolvedAt.IsZero() }

// Notice is one notification of one incident change to one channel,
// queued in the transaction that made the change, so that a change is
// notified once whichever node made it and whatever crashes after.
type Notice struct {
	ID         int64
	IncidentID int64
	// Change is "opened", "reminder" or "resolved".
	Change  string
	Channel string
	// Body is the message, as the channel's sender reads it.
	Body []byte
	// Attempts counts the sends tried so far.
	Attempts int
	// Status is NoticePending, NoticeSent or NoticeFailed (given up);
	// Error is the last failed send's, At when it was sent or given up.
	Status string
	Error  string
	At     time.Time
}

// Notice statuses.
const (
	NoticePending = "pending"
	NoticeSent    = "sent"
	NoticeFailed  = "failed"
)

// NoticeFunc builds the notices of a change of inc, once the store has
// given it its ID and recorded the change. A nil NoticeFunc queues none.
type NoticeFunc func(inc Incident) []Notice

// Incidents is what an inbox backend offers the alerting: incidents and
// their queued notices, shared by the nodes of one store.
type Incidents interface {
	// Observe records that the condition of inc's key held at inc.SeenAt.
	// With no incident of that key open it opens one (OpenedAt = SeenAt),
	// queues notices(the new incident) and returns it with opened true;
	// with one open it updates its SeenAt, Counts and LastError and
	// returns it, queuing nothing. Of nodes observing one key at once,
	// exactly one opens it.
	Observe(ctx context.Context, inc Incident, notices NoticeFunc) (Incident, bool, error)
	// See records that the condition of the incident inc.ID held at
	// inc.SeenAt: while that incident is open it updates its SeenAt,
	// Counts and LastError and returns true; once it has ended it
	// changes nothing and returns false, opening nothing either.
	See(ctx context.Context, inc Incident) (bool, error)
	// Resolve ends the open incident id at at with counts (merged over
	// the stored ones) and queues notices(the ended incident). It returns
	// false, queuing nothing, when the incident had already ended (or
	// never existed).
	Resolve(ctx context.Context, id int64, at time.Time, counts map[string]int64, notices NoticeFunc) (bool, error)
	// Remind sets the open incident id's RemindedAt to at and queues
	// notices(it) when its last reminder (or its opening, before any) is
	// before due; it returns false, queuing nothing, otherwise.
	Remind(ctx context.Context, id int64, due, at time.Time, notices NoticeFunc) (bool, error)
	// ListIncidents returns the open incidents, newest first, then, with
	// all, the ended ones newest first, up to limit in all.
	ListIncidents(ctx context.Context, all bool, limit int) ([]Incident, error)
	// Notices returns the notices of incident id, oldest first.
	Notices(ctx context.Context, id int64) ([]Notice, error)
	// LeaseNotices leases up to n queued notices due at now to owner for
	// d, oldest first; a notice leased by another owner whose lease has
	// expired is leased again.
	LeaseNotices(ctx context.Context, owner string, n int, now time.Time, d time.Duration) ([]Notice, error)
	// FinishNotice records the end of owner's send of notice id: sent,
	// or failed with errText and, when retry is not zero, due again then
	// (zero: given up). It returns ErrNotOwner when owner no longer held
	// the lease.
	FinishNotice(ctx context.Context, owner string, id int64, sent bool, errText string, retry time.Time) error
}
