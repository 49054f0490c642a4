// Command frontdoor is the hostile half of bench/frontdoor.sh: it holds
// many connections against a gateway while real senders (bench/loadgen)
// measure how they are served.
//
//	frontdoor idle -addr HOST:PORT -n 10000 -d 20s
//
// keeps n keep-alive connections open, each idle after one GET /healthz;
// one the server closes is opened again after -reopen, as an attacker
// would.
//
//	frontdoor slow -url http://HOST:PORT/in/app -n 600 -size 1047552 -d 20s
//
// keeps n requests sending a body of -size bytes at -rate bytes a second
// each (too slowly to finish within -d); one the server answers (503 when
// the pending-body budget is full) is sent again after -reopen.
//
// Both print one JSON object when -d has passed: how many connections they
// opened, how many the server closed or answered, by status, and the most
// open at once.
package main
