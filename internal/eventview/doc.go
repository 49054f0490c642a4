// Package eventview is the one outward form of a stored event: what the
// admin API answers (GET /api/events, /api/dead, /api/events/{id}) and
// what `hookgate events` and `hookgate dead` print with --json. Both build
// it here, so the API and the command line never disagree on a field.
//
// [Event] is the form of an event in a list: where it stands, what
// applying it did, how many delivery attempts it took and the last error.
// [Detail] adds what one event shows: headers, payload, the entity's
// current state, and per destination the delivery and its attempt log.
package eventview
