// Package spool keeps a node's acknowledged events on local disk while the
// shared inbox cannot be reached, and moves them into it once it can.
//
// With dedupe.on_store_error: spool, a node whose database is unreachable
// does not answer 503: [Fallback] puts the request's events into the spool,
// an embedded SQLite file beside the node whose commit is fsync'd before
// the 202, exactly as the inbox's would be. Within the spool a key is
// stored once, so a redelivery during the outage is a duplicate (200), and
// so is a request's replay guard digest: a replay of a spooled request
// under new unsigned ids is a duplicate too, as the database would answer.
// One node owns a spool file: [Open] takes an exclusive lock on it.
//
// The spool cannot know what other nodes, or this one before the outage,
// stored in the database. That is decided when the events are drained:
// [Spool.Drain] hands them to the inbox in arrival order, whose unique key
// (and replay guard) makes a copy that is already there a duplicate,
// recorded as such in the spool and never processed. The drain keeps
// Accept's contract (a request's events together, one request per digest
// in a batch), sets aside a row it cannot decode instead of stopping at it,
// and never offers a drained event again as new when its outcome cannot
// be written. Workers read only the
// inbox, so no event is processed twice; an event's received_at in the
// inbox is the time it was drained, and the spool keeps the time it
// arrived.
//
// Drained rows stay in the spool until their dedupe window has passed, so
// that `hookgate reconcile` can report what an outage did: how many events
// were spooled, drained, found to be duplicates at drain, how many are
// still waiting, and which could not be decoded.
package spool
