// Package sqlite keeps the inbox in the same SQLite file as the dedupe keys,
// so one transaction (one fsync) claims, stores and commits a whole batch.
//
// # Tables
//
// events holds every accepted event with its processing record: status,
// attempts, when it is due again, who leases it until when, the last
// error, when it was processed, and the recorded result of applying it
// (apply_outcome, apply_from, apply_to, apply_transition, apply_tie).
// entities holds the newest state of each (tenant, type, id); deliveries
// one row per (event, destination) with its own status, attempts, next
// attempt and lease; attempts every delivery attempt (the attempt log);
// lanes the state of each (source, destination); counters the intake outcomes per
// source, written by each batch in its transaction with one prepared
// statement; status_counts the events per source of each status that is
// not pending, kept by triggers, so that [Store.Stats] reads a few rows
// however many events are kept (pending events, received or retry, it
// counts in events_due, which holds only them: intake writes no count).
// All times are Unix nanoseconds.
//
// Two partial indexes serve processing without costing intake much:
// events_due holds only pending events (received, or retry), in id order,
// with the columns [Store.Lease] filters on, so a lease reads the index
// alone and stops after n; events_processed holds only processed events by
// processed_at, for [Store.Sweep], and an event enters it when it is
// finished, not when it is accepted.
//
// # Migrations
//
// [New] runs the inbox's versioned, forward-only migrations (inboxSteps;
// schema_versions records how far a file has come) in one write
// transaction, so nodes opening a file at once migrate it once. Step 1
// creates the tables in a new file and brings a file of every release
// before versioning up to date; testdata/shipped holds the schema of each
// of those releases, and the tests migrate a file of each, and of every
// version since, with rows in all its tables.
//
// # Concurrency
//
// Every write is one transaction begun with BEGIN IMMEDIATE (see
// internal/sqlitedb), so SQLite runs them one at a time across
// connections and processes: a lease selects and marks its events in one
// statement inside one, and two leasers, in one process or two, never get
// the same event. Within a process the store's writes also queue on a
// channel, so goroutines wait their turn without polling the lock.
//
// [Store.Dispatch] records a lane's ended attempts and leases its next due
// deliveries in one transaction, walking the partial index deliveries_due
// (pending deliveries by source, destination and due time); a lane records
// attempts that end close together in one call, so recording costs one
// fsync per group rather than per delivery. Statements are prepared once
// on the database and taken into each transaction; those with a row per
// item come in nine sizes (sqlitedb.Sizes), so their text is prepared once
// too.
//
// # Durability of processing
//
// A batch of events costs three write transactions: [Store.Lease],
// [Store.Apply] and [Store.Finish]; with destinations each lane adds its
// [Store.Dispatch] calls. Accept and Dispatch return once their commit is
// durable (an fsync of the WAL, which runs after the write turn is given
// back): Accept acknowledges events, Dispatch records deliveries a
// destination has seen. Lease, Apply and Finish do not wait for one
// (sqlitedb.WriteLazy):
// the WAL is written in order, so they become durable with the next
// Accept, Dispatch or checkpoint (at most a second later), and a crash
// that loses them loses only work that is redone (the events are leased,
// applied and finished again) and that nothing outside the database has
// seen, since a delivery's Dispatch makes everything before it durable.
// Under load this keeps processing from waiting for three fsyncs per
// batch, which starved intake.
//
// # Apply
//
// [Store.Apply] runs the version guard for a batch in one transaction, in
// id order: an event whose entity order is less than the stored one is
// stale and writes nothing to the entity; an equal order is a tie, applied
// in id order (arrival order) across batches too. The result is recorded
// on the event and returned unchanged by every later Apply of it, so a
// re-run after a crash or a replay sees the transition it saw the first
// time, even after the entity moved on.
package sqlite
