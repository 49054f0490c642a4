// Package postgres is a [dedupe.Store] kept in a PostgreSQL database, for
// several hookgate nodes (or several processes of one service) that share
// their dedupe keys.
//
//	store, err := postgres.Open(ctx, "postgres://hookgate@db/hookgate", postgres.Options{})
//	...
//	r, err := dedupe.ClaimOne(ctx, store, time.Minute, key.Hash())
//
// [New] takes a pgxpool.Pool the caller already has; [Open] makes one.
//
// # Table
//
// Keys live in dedupe_keys, in the first schema of the connection's
// search_path: the 16-byte hash as primary key, the claim's token, whether
// it is committed, and when it was first seen and expires. An index on
// expires lets [Store.Sweep] find expired keys without scanning the table.
// [New] creates both if they are absent, in a transaction that first takes
// an advisory lock, so nodes that start together on a new database do not
// fail on each other's CREATE TABLE.
//
// # Claims across nodes
//
// A claim is one statement for the whole batch: the hashes and fresh
// tokens travel as two arrays through unnest into INSERT ... ON CONFLICT
// DO UPDATE ... WHERE the key has expired, which returns the keys it took,
// and the same statement reads the live keys it could not take. The
// primary key is the arbiter: a claim racing another node's claim of the
// same key waits on the index until the other commits, then finds the key
// live and leaves it. No key is ever New to two claimers.
//
// Such a waiting claim may find the key in a state its statement's
// snapshot, taken before the wait, does not show; it runs the statement
// again for those keys only, and the new snapshot shows them. A key it
// reports as held is as the snapshot shows it, so a lease committed while
// the claim waited can still be reported InFlight once; the next claim
// sees it Duplicate.
//
// Claims, commits and releases lock the rows of a batch in hash order, so
// batches with keys in common, from any nodes, queue behind each other
// instead of deadlocking. Sweep skips rows another statement has locked.
// Tokens are 64-bit random numbers, so nodes need no shared counter.
//
// # Time
//
// With [Options.Now] nil the statements take the database's now(): leases
// and windows are measured on one clock, whichever node claims, commits or
// sweeps, so skew between the nodes' clocks never shortens or stretches
// them. Options.Now is for tests, which move a manual clock.
//
// # Errors
//
// Every failure from the database or the pool (refused connections,
// terminated sessions, a closed pool) wraps [dedupe.ErrUnavailable]. When
// the caller's context ended, the error wraps the context's error instead,
// so a cancelled request is not counted as a store outage.
//
// # Cost
//
// Each call is one autocommit statement, one WAL flush however many keys
// it carries. On the 2-core development VM, against PostgreSQL 15 on the
// same machine with synchronous_commit on and a table of 20,000 keys
// (go test -run '^$' -bench BenchmarkClaim -benchtime=3s -count=3),
// claiming one new key per statement took 0.36-0.43 ms and claiming 100
// per statement 15-17 µs per key, about 25 times less: the single claim
// waits for its flush, the batch shares one.
package postgres
