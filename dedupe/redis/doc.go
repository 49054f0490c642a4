// Package redis is a [dedupe.Store] kept in Redis, for many gateway nodes
// at high volume: a front that answers duplicates and in-flight copies
// without touching a database. It is not durable the way the SQL stores
// are (Redis may lose its last writes on a crash, evict keys under memory
// pressure, or be flushed), so the gateway keeps a durable second line
// behind it: the inbox's unique key.
//
//	store, err := redis.Open("redis://127.0.0.1:6379/0", redis.Options{})
//	...
//	r, err := dedupe.ClaimOne(ctx, store, time.Minute, key.Hash())
//
// [New] takes a go-redis client the caller already has (a single server,
// a Sentinel failover client or a Cluster client); [Open] makes one.
//
// # Keys
//
// A hash h is kept at "{prefix}:h" (h in hex) as a string value
// "token|state|firstSeen|expires", state l for a lease and c for a
// committed key, times in Unix milliseconds. The prefix ([Options.Prefix])
// sits in a hash tag, so every key of a store is in one Redis Cluster slot
// and one script may read and write a whole batch. Nodes of one gateway
// share a prefix; stores with different prefixes on one Redis never meet.
//
// # Protocol
//
// Each batch is one script call: one round trip, and Redis runs it without
// interleaving another client's commands.
//
//   - Claim takes each key with SET key value NX PX lease. When the key is
//     held, the script reads it and reports Duplicate (committed) or
//     InFlight (leased), with the holder's times. A key held under the
//     very token the claim carries is New again: the claim was sent again
//     after its answer was lost.
//   - Commit checks that the key still holds the lease's token and rewrites
//     it as committed with PX window; committing again keeps the first
//     window. A key that is gone or holds another token is [dedupe.ErrLeaseLost].
//   - Release deletes the key only if it holds the lease's token
//     uncommitted (compare and delete), so a lease that expired and was
//     taken over cannot release the new owner's claim.
//   - Record writes keys as committed with the times a durable store gave
//     them, whoever holds them: for a front whose arbiter is a database,
//     what the database committed is committed even after Redis lost the
//     lease (a flush, an eviction, a failover). A holder keeps its token.
//
// Tokens are 64-bit random numbers, so nodes need no shared counter.
//
// # Time
//
// With [Options.Now] nil, the store's clock is Redis's: the scripts read
// TIME for first-seen and expiry times, and Redis removes a key when its PX
// ends, so leases and windows need no sweep ([Store.Sweep] reports 0) and
// are measured on one clock whichever node claims or commits. Skew between
// the gateway nodes' clocks can therefore neither shorten nor stretch a
// lease or a window; it only shifts how the times a node logs beside
// Redis's first-seen times compare. What skew can still do is between Redis
// servers: after a failover the new primary expires keys by its own clock,
// so a lease or window may end early or late by the skew between the old
// primary and the new one. Ending early lets a copy through the front as
// New, where the inbox's unique key still finds it duplicate; ending late
// answers a copy InFlight (409, retried by the provider) a little longer.
// Neither accepts an event twice.
//
// Options.Now is for tests, which move a manual clock: the scripts then
// judge expiry by its times, and Sweep removes what expired by it.
//
// # Errors and timeouts
//
// Every call is bounded by [Options.Timeout] (default [DefaultTimeout]),
// from sending the batch to reading the answer, through its context;
// [Open]'s client honours it, and a client given to [New] does so when it
// has ContextTimeoutEnabled. Every failure from Redis, a timeout included,
// wraps [dedupe.ErrUnavailable], so a caller can tell "Redis is down" from
// a verdict and fall back on its database. When the caller's own context
// ended, the error wraps the context's error instead.
//
// # Cost
//
// On the 2-core development VM, against Redis 7.0 on the same machine,
// with 20,000 committed keys under the prefix (go test -run '^$' -bench .
// -benchtime=2s -count=3, other builds keeping the load average at 5-8):
//
//	                                     one key per call   100 keys per call
//	claim and commit new keys            0.11-0.21 ms/key   17-31 µs/key
//	claim committed keys (retries)       87-132 µs/key      13-15 µs/key
//
// A single key pays the round trips; a batch pays Redis's own work, most
// of it the script's per key (SET and GET took 2.4 µs of the 12 µs per
// key Redis's command statistics showed for a batch of 100 retries).
package redis
