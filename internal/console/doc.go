// Package console is hookgate's web console under /ui/: server-rendered
// pages for an operator, over the same inbox the admin API reads.
//
// Sign-in takes the admin token through a form and opens a session held
// in memory: an HttpOnly, SameSite=Strict cookie (Secure on TLS) names a
// random session id, and every POST carries the session's CSRF token.
// [New] refuses to build the console without a token ([ErrNoToken]), so
// the server mounts it only when admin.token is set, like /api.
//
// The pages:
//
//	GET  /ui/                            overview: per source counts and hit rate, pending,
//	                                     dead, destination health, charts of the last hour
//	                                     by minute and the last day by hour
//	GET  /ui/events                      events, newest first, filtered and paged by id
//	GET  /ui/events/{id}                 one event: payload, headers, apply outcome, every attempt
//	GET  /ui/dead                        dead events with their reason
//	POST /ui/replay                      replay events (a count is shown before it runs)
//	GET  /ui/sources                     what to paste into each provider's settings
//	POST /ui/sources/{name}/test         send the provider's example event through the intake
//	GET  /ui/destinations/{name}         a destination's lanes, circuit, pending and attempts
//	POST /ui/destinations/{name}/hold    pause (held=1) or resume (held=0) its delivery
//	POST /ui/destinations/{name}/skip    let a blocked key of an ordered lane move on
//	GET  /ui/tail                        new events as they arrive (server-sent events)
//
// Every list reads one page through an index (List pages by id), so the
// pages stay fast on a large inbox. The charts read the store's counts by
// time (inbox.ActivityReader), so they show what the tables hold, across
// restarts and nodes. Templates and assets are embedded; nothing is
// fetched from elsewhere, so the console works air-gapped.
package console
