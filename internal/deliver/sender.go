package deliver

import (
	"context"
	"fmt"
	"sync"

	"github.com/hookgate/hookgate/internal/config"
)

// Sender makes one attempt to deliver a message to one destination, of
// whatever kind: HTTP, or a broker's (NATS JetStream, RabbitMQ, Kafka).
// Everything around the attempt (retries and their backoff, the circuit,
// leases, the attempt log, the dead list, redelivery, types:, on:) is the
// worker's, the same for every kind. For a broker, Outcome.Code is 0,
// Delivered means the broker acknowledged the message (a PubAck, a
// publisher confirm, a produce acknowledgement), Retryable a failure worth
// another attempt (the broker unreachable, a timeout) and not Retryable
// one that will not pass (an unroutable message), and Body says what the
// broker answered.
//
// A Sender that holds connections also implements io.Closer; the server
// closes it when it stops. A Sender is safe for concurrent use.
type Sender interface {
	Send(ctx context.Context, m Message) Outcome
}

// Sender returns the sender that posts to d through c.
func (c *Client) Sender(d Destination) Sender { return httpSender{c, d} }

type httpSender struct {
	c *Client
	d Destination
}

func (s httpSender) Send(ctx context.Context, m Message) Outcome { return s.c.Deliver(ctx, s.d, m) }

// Opener makes the Sender of a destination of one kind from its
// configuration (URL, subject, exchange, topic, password, timeout).
type Opener func(d config.Destination) (Sender, error)

var (
	openersMu sync.Mutex
	openers   = map[string]Opener{}
)

// Register makes open the Opener of destinations of kind (a
// config.Kind* constant). A broker's package registers itself in its
// init; a binary that links it can deliver to that kind.
func Register(kind string, open Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	openers[kind] = open
}

// Open returns the Sender of a destination of a broker's kind (not HTTP,
// which the worker's Client sends).
func Open(d config.Destination) (Sender, error) {
	openersMu.Lock()
	open, ok := openers[d.Kind()]
	openersMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("destination %s: %s destinations are not built into this hookgate", d.Name, d.Kind())
	}
	return open(d)
}
