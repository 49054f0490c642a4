// Package deliver posts events to the application's destinations, signed
// with Standard Webhooks headers whose webhook-id is the event's key (the
// same on every retry and replay, so the application can deduplicate), and
// classifies each answer: delivered, retry later, or failed for good.
package deliver
