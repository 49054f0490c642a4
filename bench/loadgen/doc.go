// Command loadgen drives a webhook receiver with signed Standard Webhooks
// deliveries from a fixed number of concurrent keep-alive connections and
// reports throughput and latency.
//
//	loadgen -url http://127.0.0.1:8080/in/app -secret whsec_... -c 64 -d 10s -dup 0.2
//
// Every request carries a webhook-id and is freshly signed (its own
// webhook-timestamp) with the verify package. New events get the ids
// "<prefix>-0", "<prefix>-1", ... in the order they are first sent (-id-prefix,
// default the -label). With probability -dup a request instead resends an id
// whose first send was already answered 202 or 200, so every duplicate is a
// true redelivery of a stored event, never a concurrent copy.
//
// With -replay N, loadgen sends only redeliveries of "<prefix>-0" ..
// "<prefix>-(N-1)", ids an earlier run with the same prefix stored; the
// earlier run's -json output gives N as "ids".
//
// With -rate R the requests of all connections together are paced to R
// per second: request k of the run is started no earlier than k/R seconds
// after the start. With -new-conns each request opens a connection of its
// own, as senders that do not keep connections alive do. With -n N the run stops once N requests (warmup
// included) have completed, or at the end of -d if that comes first.
//
// With -stamp each body also carries "sent_ns", the Unix time in
// nanoseconds at which the request was built just before sending, and the
// entity fields a processing benchmark selects: event n is about
// "order":"o-(n mod 100)" at "seq":n with "state" one of pending, paid,
// shipped, refunded, changing with each successive event of an order. The
// padding shrinks by what these add, so -size is kept. A redelivery then
// carries its own send time, so only its body differs from the first send.
//
// Requests run for -warmup, then for -d while measured. A request is
// measured when it completes inside the measured window; rates are those
// completions divided by the window's length. Latency is the time from
// sending the request to reading the whole response body.
//
// The report is one line, or one JSON object with -json: requests, requests
// per second, 202s (accepted) and 200s (duplicates) per second, transport
// errors, other statuses, p50, p99 and max over all requests, and p99 of the
// 202s and of the 200s separately. redelivered_202 counts redeliveries
// answered 202 and new_200 first sends answered 200; a deduplicating receiver
// keeps both at zero.
package main
