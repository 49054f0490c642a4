// Command naive is the per-request baseline for the intake benchmark: the
// work hookgate does for a Standard Webhooks delivery, with one SQLite
// transaction and one fsync per request instead of a group commit.
//
//	naive -listen 127.0.0.1:0 -db /tmp/naive.db -secret whsec_...
//
// For POST /in/{source} it reads the body (413 above 1 MiB), verifies the
// signature with the verify package (401), then in one transaction inserts
// the webhook-id into the keys table (INSERT OR IGNORE) and, when the id is
// new, the payload into the events table, and commits durably (WAL,
// synchronous=FULL, busy timeout, BEGIN IMMEDIATE, and SQLite's own
// checkpoints, which run inside the commit that fills the WAL). It answers 202 for a
// new id, 200 for a duplicate and 503 when the store fails.
//
// -db also takes a PostgreSQL URL (postgres://...): the same transaction
// per request (INSERT ... ON CONFLICT DO NOTHING, then the event), committed
// by the server's own durability settings; give it -max-conns 0 there, so
// that requests run their transactions side by side as a pooled service
// would.
//
// -max-conns limits the database connections; the default 1 makes
// requests queue for the write lock in database/sql instead of in
// SQLite's busy handler, whose sleeps would only make the baseline slower.
//
// It prints "listening on http://ADDR" once it accepts connections, answers
// GET /healthz with 200, and stops on SIGINT or SIGTERM.
package main
