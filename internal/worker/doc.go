// Package worker turns the inbox into deliveries: a pool of workers leases
// batches of due events, validates each against its source's JSON Schema,
// applies the batch's entities in one transaction (order-safe, recorded
// once), delivers every event to the destinations it is for, and records a
// per-event outcome: processed, retry at a time, or dead with a reason. One
// event's failure never holds back the rest of its batch.
package worker
