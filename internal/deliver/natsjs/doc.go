// Package natsjs delivers events to NATS JetStream: a destination whose
// url is nats://host:port (or tls://host:port) publishes each event to the
// subject its configuration fills with the event's source, tenant and
// type, with Nats-Msg-Id set to the event's webhook-id so that the stream
// drops a resend it saw within its duplicate window. An attempt is
// delivered when the stream's PubAck comes back, a duplicate's too.
//
// Linking the package (a blank import) registers the kind with
// deliver.Register. The connection is made in the background: a gateway
// starts while the server is down, and its attempts fail, to be retried,
// until the server answers. Streams are the operator's: the sender never
// creates one, and an attempt to a subject no stream takes fails, to be
// retried once one does.
package natsjs
