// Package kafka delivers events to Kafka: each event is one record,
// produced to the destination's topic ({source}, {tenant} and {type}
// filled per event) with the event's order key as its key, so that one
// entity's events share a partition, and its webhook-id, content type,
// type, source and tenant among its headers. An attempt is delivered when
// the produce is acknowledged by all in-sync replicas (acks=all), through
// franz-go's idempotent producer.
//
// A destination's URL is kafka://host:port[,host:port...], the seed
// brokers; ?tls=1 dials them with TLS (the system's roots), and a user in
// the URL with ?sasl=plain, scram-sha-256 or scram-sha-512 authenticates
// with the destination's password, given by reference.
//
// Each destination has one client, opened without connecting and shared
// by its concurrent attempts. An attempt that ends without an
// acknowledgement (its timeout, the broker away) is failed at once, and
// its record is dropped from the client's buffer rather than sent later;
// a record already on the wire then may still have been written, so the
// worker's next attempt can duplicate it, under the same webhook-id.
package kafka
