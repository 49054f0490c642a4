// Package admin is hookgate's admin HTTP API under /api.
//
// Every request needs "Authorization: Bearer TOKEN"; [New] refuses to build
// the API without a token ([ErrNoToken]), so it is never served open. The
// routes answer JSON:
//
//	GET  /api/events?source=&tenant=&status=&limit=&before=&after=   events, newest first
//	GET  /api/events/{id}?payload=base64                             one event: payload, entity, deliveries, attempt log
//	GET  /api/dead?source=&tenant=&limit=&before=                    dead events, newest first
//	POST /api/replay                                                 put events back to be processed
//	GET  /api/stats                                                  counts, dedupe hit rate, oldest pending, lanes
//
// Events have the form of package eventview, the same that `hookgate
// events` prints with --json. A list answers {"events": [...], "next": ID};
// "next" is there when the page is full, and passing it as before= gives
// the next page. after=ID reads forwards: the limit oldest events after
// ID (still newest first), and "next" is then the after= of the next
// page. payload=base64 puts an event's body in payload_base64 byte for
// byte, where payload would re-encode a JSON body. A replay takes
// {"dead", "source", "tenant", "since": "24h" or "7d", "ids": [...],
// "redeliver", "destination", "all"} and answers
// {"replayed": N}; like `hookgate replay` it refuses a request that
// selects nothing unless "all" is true, and a "destination" without
// "redeliver" (only a redelivery calls a destination that already has the
// event). Errors answer {"error": "..."} with 400, 401, 404, 405, 413,
// 429 (too many wrong tokens from the client's address, with Retry-After)
// or 500. Every answer carries X-Content-Type-Options: nosniff.
package admin
