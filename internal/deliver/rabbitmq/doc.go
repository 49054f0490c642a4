// Package rabbitmq delivers events to a RabbitMQ exchange: destinations
// whose URL is amqp:// or amqps://. Each event is published persistent and
// mandatory on a channel in confirm mode, with the delivery's webhook-id as
// its MessageId, and counts as delivered only when the broker confirms it
// (basic.ack) without first returning it as unroutable (basic.return). A
// returned, nacked or unconfirmed message is a retryable failure.
//
// A Sender connects on its first Send, keeps one connection and a pool of
// channels, one per message in flight, so that a confirm or a return is
// never taken for another message's; a connection or channel that died is
// replaced on the next Send, which fails meanwhile.
package rabbitmq
