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
//	frontdoor slowsmall -url http://HOST:PORT/in/app -n 5000 -d 20s
//
// keeps n requests that each announce a body of -size bytes (default 100)
// and send one byte of it every -every (default 5s); one the server
// answers (408 once it is too slow) or closes (to make room for another
// connection) is sent again after -reopen.
//
// All print one JSON object when -d has passed: how many connections they
// opened, how many the server closed or answered, by status, and the most
// open at once.
package main
