// Command bare is the ceiling of the HTTP stack for the intake benchmark: a
// net/http server that reads each POST /in/{source} body and answers 202,
// with no verification and no storage.
//
//	bare -listen 127.0.0.1:0
//
// It prints "listening on http://ADDR" once it accepts connections, answers
// GET /healthz with 200, and stops on SIGINT or SIGTERM.
package main
