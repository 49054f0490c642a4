// Package front is the gateway's Redis front for dedupe (`dedupe.front`):
// the nodes of one gateway claim each event's key in Redis before they
// write it to the inbox, so a provider's retry of a stored event is
// answered from Redis without touching the database, and a copy that
// another node is writing gets 409 instead of a database round trip.
//
// Redis is never the only line. The inbox's unique key still decides
// every event the front lets through, so a Redis that was flushed,
// evicted keys, failed over or is down cannot make the gateway accept an
// event twice: at worst the front answers Claimed or Unknown for a stored
// event, and the inbox finds it duplicate.
//
// # How intake uses it
//
// For the events of a request (or of a group commit), intake calls
//
//	answers := front.Check(ctx, hashes)
//
// and acts on each answer:
//
//   - Duplicate: answer 200 with the answer's FirstSeen; do not touch the
//     inbox.
//   - InFlightElsewhere: another node holds the key while it writes the
//     event: answer 409 with Retry-After until Expires; do not touch the
//     inbox. (Copies on the same node never get here: intake's
//     single-flight joins them before Check.)
//   - Claimed or Unknown: write the event to the inbox as without a front;
//     the inbox decides.
//
// After the inbox write:
//
//   - the inbox stored the event (New) or found it Duplicate: front.Commit
//     with the inbox's first-seen time and the end of the source's window,
//     so the next copy is answered from Redis. A Duplicate from the inbox
//     also commits: it means Redis had lost the key, and this teaches it
//     again;
//   - the inbox write failed: front.Release the Claimed leases, so the
//     sender's retry is claimed again at once.
//
// Commit and Release errors need no handling: the inbox still decides the
// next copy, and an unreleased claim ends with its lease
// ([Options.Lease]). Commit writes what the inbox decided whoever holds
// the key in Redis, because the inbox is the arbiter.
//
// # Outages
//
// Every call is bounded by [Options.Timeout] (50 ms by default). When
// Redis fails or does not answer in time, every answer of the call is
// Unknown, so the request falls through to the inbox: no loss and no
// duplicate, only the database's cost. The first failure begins an outage,
// logged once (rate-limited, so a flapping Redis cannot flood the log);
// during it the front does not try Redis for [Options.RetryAfter] after
// each failure, so requests do not each wait out the timeout, and then
// lets one call try it. The first answer ends the outage (logged once) and
// the front is used again. A request whose own context ended gets Unknown
// and is no sign of an outage.
//
// A [Front] is a prometheus.Collector of
//
//	hookgate_front_up                1 while Redis answers, 0 in an outage
//	hookgate_front_failures_total    calls to Redis that failed or timed out
//	hookgate_front_bypassed_total    events the inbox decided without the front
//
// # Cost
//
// Answering redeliveries of stored events from Redis (BenchmarkCheckDuplicate,
// go test -run '^$' -bench . -benchtime=2s -count=3 on the 2-core
// development VM, load average 5-8, Redis 7.0 on the same machine) took
// 90-198 µs per event one event per Check and 11.5-18.5 µs per event 100 per
// Check.
//
// # Times
//
// Leases run on Redis's clock; committed keys expire at the inbox's
// Expires, read by Redis's clock. A skew between the database and Redis
// moves the end of a window in Redis by the skew: ending early sends a
// late copy to the inbox, which finds it duplicate; ending late answers a
// copy Duplicate for up to the skew after the inbox would have taken it
// as new, and the window is longer than every provider's retries.
package front
