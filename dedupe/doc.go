// Package dedupe turns at-least-once deliveries into exactly-once acceptance.
//
// A [Key] names one event: the tenant it belongs to, the provider that sent
// it, the object type and action it describes, and the provider's event id.
// [Key.Hash] reduces it to a 16-byte [Hash] that stores keep; [Key.Scope]
// keeps a readable form beside it for operators.
//
// Every [Store] speaks the same claim protocol:
//
//	results := store.Claim(ctx, lease, hashes...)  // New | Duplicate | InFlight
//	... make the event durable ...
//	store.Commit(ctx, window, leases...)           // duplicate until the window ends
//	// or, when the event could not be stored:
//	store.Release(ctx, leases...)                  // the sender's retry is new again
//
// A claim that is neither committed nor released expires after its lease, so
// a crashed claimer never blocks the provider's retry. Each claim carries a
// token: a claimer whose lease expired and was taken over cannot commit or
// release the new owner's claim ([ErrLeaseLost]).
//
// [Middleware] applies the protocol around a synchronous net/http handler.
// Stores live in sub-packages: memory (one process, tests), sqlite (one
// machine, durable), postgres (several nodes on one database, durable) and
// redis (several nodes, expiring keys; a front for a durable store rather
// than the only record). dedupetest holds the conformance suite every
// store passes.
package dedupe
