// Package postgres keeps the inbox in PostgreSQL, so that several hookgate
// nodes share one inbox: any node accepts, any node's workers process, and
// the database decides every race between them.
//
// # Tables
//
// inbox_keys holds the dedupe key of each accepted event until its window
// ends, inbox_digests the replay guard's digests likewise; inbox_events
// every accepted event with its processing record (status, attempts, next
// attempt, lease owner and expiry, last error, when processed, the
// recorded apply result); inbox_entities the newest state of each
// (tenant, type, id); inbox_deliveries one row per (event, destination)
// with its own status, attempts, next attempt and lease; inbox_attempts
// the attempt log; inbox_lanes the state of each (source, destination);
// inbox_counts the event counts by status and the intake counts, per
// source; inbox_settings named values; inbox_leader the lease on the lead. Every table starts with inbox_, so
// the inbox can share a database with the public dedupe/postgres store.
// Times are timestamptz, and '-infinity' stands for "none". Text that
// PostgreSQL cannot hold (NUL, bytes that are not UTF-8) in a key part or
// a destination's answer is stored with U+FFFD in their place, where the
// SQLite inbox keeps the bytes; the key's hash is computed before, so
// duplicates are decided as there.
//
// [New] migrates the schema in one transaction under a transaction-level
// advisory lock, recording each version in inbox_schema_migrations, so
// nodes that start at once apply each version once.
//
// # Behind a pooler
//
// Nothing sent over the pool depends on the session, so a pooler that
// lends a server connection per transaction (PgBouncer in transaction
// mode) may stand between the nodes and the database: [Open] runs
// statements in pgx's cache_describe mode, unnamed statements that never
// outlive their transaction, unless the URL chooses a mode; the lead is a
// lease row ([Store.Lead]); [Store.Watch] listens only on a session of
// its own ([Options.Session]), which bypasses the pooler.
//
// # One clock
//
// With [Options.Now] nil every statement reads the time from the
// database's now(), so leases, windows, retries and retention are measured
// on one clock whichever node writes them.
//
// # Several nodes
//
// [Store.Accept] writes a batch in one autocommitted statement: the
// batch's keys go in with INSERT ... ON CONFLICT, and only the keys it
// inserted (or took over from an expired window) get an event row. The
// unique key is the arbiter: a copy that another node is inserting waits
// on the index and becomes a duplicate once that node commits.
//
// [Store.Lease] and [Store.Dispatch] pick rows with FOR UPDATE SKIP
// LOCKED, so leasers on any node get different events and deliveries
// without waiting for each other; every lease-guarded write checks the
// owner, and reports the results of a lease it lost as SQLite's inbox
// does ([inbox.LostError], [inbox.Dispatched].Lost). Writes that lock
// several rows lock them in one order (keys and digests by their bytes,
// events by id and before their deliveries, entities by a sorted advisory
// lock taken after their events), so concurrent transactions wait for each
// other rather than deadlock; sweeps skip locked rows instead of waiting.
// [Store.Apply] holds the locks of the entities it writes while it reads
// and writes them, so the version guard holds across nodes.
//
// No row is written by every accept or every finish, which would make all
// nodes take turns: counts are kept in shards, one per database session,
// summed by [Store.Stats] and folded by [Store.Sweep]. Stats otherwise
// reads the first entries of partial indexes on the open statuses, and
// never the whole events table.
//
// # Plans on a new database
//
// A prepared statement runs on a generic plan from its sixth run, made
// with the tables' statistics of that moment and kept until a table is
// analyzed. On a new database that is while the tables are empty, and
// the plans scan whole tables, which grow to thousands of rows before
// autovacuum, which looks once a minute, analyzes them. So every thousand
// events a node accepts, the Store looks at the tables that grow with the
// events and analyzes those of at least a thousand rows that were never
// analyzed or had more rows changed since their last analyze than they
// had then; every session then plans again. Each
// statement is written so that its plan on a table of some size, so
// analyzed, reads by index (TestPlans).
//
// Unlike the SQLite inbox, Accept refuses a batch that carries one hash
// twice ([ErrRepeatedHash]), which the [inbox.Store] contract rules out:
// one statement cannot take one key twice.
package postgres
