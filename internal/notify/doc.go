// Package notify tells operators about hookgate's incidents: it holds the
// Message every alert channel sends, the words they share (Text), and two
// of the channels, Slack (an incoming webhook) and Email (SMTP). The
// webhook channel sends a Message as JSON through hookgate's own delivery
// path; schemas/alert.json describes that body.
//
// A channel's URL and password are secrets: no error of this package
// shows them. Each Send is bounded in time by its context and by the
// channel's timeout, and reads at most a few KiB of any answer.
package notify
