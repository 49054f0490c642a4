// Package spool keeps a node's acknowledged events on local disk while the
// shared inbox cannot be reached, and moves them into it once it can.
//
// With dedupe.on_store_error: spool, a node whose database is unreachable
// does not answer 503: [Fallback] puts the request's events into the spool,
// an embedded SQLite file beside the node whose commit is fsync'd before
// the 202, exactly as the inbox's would be. Within the spool a key is
// stored once, so a redelivery during the outage is a duplicate (200).
//
// The spool cannot know what other nodes, or this one before the outage,
// stored in the database. That is decided when the events are drained:
// [Spool.Drain] hands them to the inbox in arrival order, whose unique key
// (and replay guard) makes a copy that is already there a duplicate,
// recorded as such in the spool and never processed. Workers read only the
// inbox, so no event is processed twice; an event's received_at in the
// inbox is the time it was drained, and the spool keeps the time it
// arrived.
//
// Drained rows stay in the spool until their dedupe window has passed, so
// that `hookgate reconcile` can report what an outage did: how many events
// were spooled, drained, found to be duplicates at drain, and how many are
// still waiting.
package spool
