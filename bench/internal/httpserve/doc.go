// Package httpserve runs the benchmark's reference servers: it listens,
// announces the address it got, serves until its context ends and then
// shuts down gracefully.
//
// bench/run.sh starts each server on port 0 and reads the announced
// "listening on http://ADDR" line, so a server always gets a free port
// without a race between choosing the port and binding it.
package httpserve
