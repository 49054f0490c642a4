// Package reconcile runs a source's reconciliation with its provider: it
// lists what the provider says it sent since the source's checkpoint,
// keys each listed event as intake keys the webhook, and accepts the
// events whose webhook never came, marked as recovered. Recovered events
// are then processed and delivered like any other.
package reconcile
