// Package worker turns the inbox into deliveries. A pool of workers leases
// batches of due events, validates each against its source's JSON Schema,
// applies the batch's entities in one transaction (order-safe, recorded
// once) and finishes each event: dead (invalid), retry (processing
// failed), or delivering to the destinations it is for. One dispatcher per
// lane (a destination of a source) then leases that lane's due deliveries,
// up to its max_in_flight, makes them, and records each attempt; each
// delivery retries on its own schedule, and a lane that keeps failing is
// paused and probed. A lane an operator holds (inbox.LaneHolder) leases
// nothing, on every node, until it is released: the store's Dispatch
// reads the hold in the transaction that would lease. A lane with order:
// entity leases through inbox.OrderedDispatcher instead: the store hands
// out only the head delivery of each key that has none in flight, so one
// key's deliveries go one at a time in version order on every node, and a
// key that backs off holds back no other. One event's
// failure never holds back the rest of its batch, and one destination
// never delays another.
package worker
