// Command kfake runs a one-broker Kafka cluster in its own process, for
// the processing benchmark's Kafka destination (bench/process.sh
// DEST=kafka): franz-go's kfake, which speaks the Kafka protocol and keeps
// its records in memory. It is not Kafka, and figures measured against it
// say how fast hookgate produces to an in-process fake, not what a real
// broker would take.
//
//	kfake -listen 127.0.0.1:0 -topic hooks -partitions 4
//
// It creates the topic, prints "listening on kafka://ADDR" once it accepts
// connections and stops on SIGINT or SIGTERM.
package main
