// Package deliver posts events to the application's destinations, signed
// with Standard Webhooks headers whose webhook-id is the event's key (the
// same on every retry and replay, so the application can deduplicate), and
// classifies each answer: delivered, retry later, or failed for good.
//
// Redirects are never followed: a destination that answers 3xx has a URL
// to correct, and the attempt fails for good. A destination's URL is shown
// only as Redact shows it, scheme://host[:port], in an Outcome's error and
// body as everywhere else: its path, query and userinfo may hold tokens.
// Each Outcome keeps the start
// of the answer's body as text safe to log, and NextDelay turns a failure
// count and a Retry-After into the wait before the next attempt, without
// overflowing.
package deliver
