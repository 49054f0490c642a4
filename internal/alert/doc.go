// Package alert opens and resolves incidents and notifies them.
//
// Every node runs an [Engine]. Each check it reads the inbox's state (lane
// health, dead and pending counts, what each source accepted) and its own
// (refused requests, the spool), and records each condition that holds in
// the store's incidents, which the nodes share: of nodes that see one
// condition start, exactly one opens its incident, and the notices of a
// change are queued in the transaction that makes it. Any node then sends
// the queued notices: webhook channels through the inbox itself (an event
// of the internal source [Source], delivered with retries, the circuit and
// the attempt log like any other), Slack and e-mail directly, retried with
// backoff. An incident ends when its condition no longer holds: at once
// for what the store shows every node (a lane, the processing lag, a
// source's traffic), after a quiet spell for what nodes see each on their
// own (refused requests, the spool, events going dead).
package alert
