// Command sink is the destination of the processing benchmark
// (bench/process.sh): a net/http server that hookgate delivers events to.
// It answers 204 to every delivery and measures what arrives.
//
//	sink -listen 127.0.0.1:0
//
// Deliveries are POSTs to /hooks/<anything>. The sink counts them and the
// distinct webhook-id headers among them (deliveries - distinct is the
// number of repeated deliveries), and notes the times of the first and last.
// When the body is a JSON object with "sent_ns", the Unix time in
// nanoseconds at which loadgen -stamp sent the event to the gateway, the
// delivery's latency is its time of receipt minus that send time: the time
// from sending to the gateway to delivery at the destination, on the same
// clock. Deliveries without it count as "unstamped". A batch (a POST
// with webhook-batch-count) counts as one delivery per element of its
// JSON array, each element's webhook_id its id and its payload its body,
// and is counted in batches.
//
// GET /stats returns the counts as JSON: deliveries, batches, distinct, unstamped,
// first_at and last_at (RFC 3339, "" before the first delivery), seconds
// (last_at - first_at), per_s (deliveries / seconds; 0 while seconds is 0)
// the latency p50_ms, p99_ms and max_ms over all stamped deliveries, and
// held, the number of deliveries waiting for a release. POST /reset clears
// the counts. GET /healthz answers 200.
//
// POST /hold makes every delivery wait, unanswered and not yet counted,
// until POST /release; a held delivery is received when it is released.
// The benchmark holds deliveries while it fills the gateway's inbox, so
// that the release starts a drain of a full inbox.
//
// With -from URL the sink also consumes from a broker, and counts each
// message as a delivery, its id the event's key hookgate sent with it and
// its body the payload, so that GET /stats says the same of a broker
// destination as of an HTTP one:
//
//	sink -listen 127.0.0.1:0 -from 'nats://127.0.0.1:4222?stream=HOOKS&subject=hooks.>'
//	sink -listen 127.0.0.1:0 -from 'amqp://guest:guest@127.0.0.1:5672/?exchange=hooks&queue=bench&key=%23'
//	sink -listen 127.0.0.1:0 -from 'kafka://127.0.0.1:9092?topic=hooks'
//
// NATS: the stream is created, taking subject, when it does not exist, and
// read from its first message by an ordered consumer; the id is the
// Nats-Msg-Id. RabbitMQ: a durable topic exchange (none for the default
// exchange) and a durable queue bound to it by key are declared, and the
// queue read with automatic acknowledgements; the id is the message_id.
// Kafka: the topic, which must exist, is read from its start; the id is
// the webhook-id header. A stream or queue the sink created is deleted
// when it stops. The broker's stream, queue or topic is ready before the
// sink announces its address. POST /hold and /release answer 400 then:
// the sink cannot hold back a broker's messages.
//
// It prints "listening on http://ADDR" once it accepts connections and
// stops on SIGINT or SIGTERM.
package main
