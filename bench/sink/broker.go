package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// setupTimeout bounds connecting to a broker and declaring what the sink
// consumes from.
const setupTimeout = 30 * time.Second

// consumer reads a broker's messages into a sink until its context ends,
// then closes its connection and deletes what the sink created there.
type consumer func(ctx context.Context) error

// openBroker connects to the broker named by from, makes sure there is
// something to consume (a stream, a queue bound to an exchange, a topic)
// and returns the consumer that records each message in s. When it
// returns, hookgate can deliver: what it publishes from then on is read.
func openBroker(from string, s *sink) (consumer, error) {
	u, err := url.Parse(from)
	if err != nil {
		return nil, fmt.Errorf("-from: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	q := u.Query()
	var c consumer
	switch u.Scheme {
	case "nats":
		c, err = openNATS(ctx, u.Host, q.Get("stream"), q.Get("subject"), s)
	case "amqp":
		c, err = openAMQP(u, q.Get("exchange"), q.Get("queue"), q.Get("key"), s)
	case "kafka":
		c, err = openKafka(ctx, u.Host, q.Get("topic"), s)
	default:
		return nil, fmt.Errorf("-from %s://…: want nats, amqp or kafka", u.Scheme)
	}
	if err != nil {
		return nil, fmt.Errorf("%s://%s: %w", u.Scheme, u.Host, err)
	}
	s.broker = u.Scheme + "://" + u.Host
	return c, nil
}

// openNATS reads stream from its first message with an ordered consumer,
// and creates the stream, taking subject, when it does not exist (and
// deletes it when the consumer ends). Every message of the stream counts;
// its id is its Nats-Msg-Id.
func openNATS(ctx context.Context, host, stream, subject string, s *sink) (consumer, error) {
	if stream == "" || subject == "" {
		return nil, errors.New("want ?stream=NAME&subject=SUBJECT")
	}
	nc, err := nats.Connect("nats://"+host, nats.Name("hookgate-bench-sink"))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	created := false
	_, err = js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject}})
		created = err == nil
	}
	var cons jetstream.Consumer
	if err == nil {
		cons, err = js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("stream %s: %w", stream, err)
	}
	return func(ctx context.Context) error {
		defer nc.Close()
		failed := make(chan error, 1)
		cc, err := cons.Consume(func(m jetstream.Msg) {
			s.record(m.Headers().Get(nats.MsgIdHdr), m.Data())
		}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConnectionClosed) {
				select {
				case failed <- err:
				default:
				}
			}
		}))
		if err != nil {
			return fmt.Errorf("consume stream %s: %w", stream, err)
		}
		select {
		case <-ctx.Done():
		case err = <-failed:
			err = fmt.Errorf("consume stream %s: %w", stream, err)
		}
		cc.Stop()
		if created {
			dctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
			defer cancel()
			if derr := js.DeleteStream(dctx, stream); derr != nil {
				err = errors.Join(err, fmt.Errorf("delete stream %s: %w", stream, derr))
			}
		}
		return err
	}, nil
}

// openAMQP declares a durable topic exchange (unless exchange is empty:
// the default exchange) and a durable queue bound to it by key, and reads
// the queue with automatic acknowledgements. It deletes the queue when the
// consumer ends if it was not there before. A message's id is its
// message_id, or its webhook-id header.
func openAMQP(u *url.URL, exchange, queue, key string, s *sink) (consumer, error) {
	if queue == "" || (exchange != "" && key == "") {
		return nil, errors.New("want ?exchange=X&queue=Q&key=K (or ?queue=Q alone, on the default exchange)")
	}
	dial := *u
	q := dial.Query()
	for _, k := range []string{"exchange", "queue", "key"} {
		q.Del(k)
	}
	dial.RawQuery = q.Encode()
	conn, err := amqp.DialConfig(dial.String(), amqp.Config{Dial: amqp.DefaultDial(setupTimeout), Properties: amqp.Table{"connection_name": "hookgate-bench-sink"}})
	if err != nil {
		return nil, err
	}
	ch, created, err := declare(conn, exchange, queue, key)
	if err != nil {
		conn.Close()
		return nil, err
	}
	msgs, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("consume queue %s: %w", queue, err)
	}
	return func(ctx context.Context) error {
		defer conn.Close()
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					return fmt.Errorf("consume queue %s: the channel closed", queue)
				}
				id := m.MessageId
				if id == "" {
					id, _ = m.Headers[headerWebhookID].(string)
				}
				s.record(id, m.Body)
			case <-ctx.Done():
				if !created {
					return nil
				}
				if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
					return fmt.Errorf("delete queue %s: %w", queue, err)
				}
				return nil
			}
		}
	}, nil
}

// declare declares what openAMQP reads from and opens the channel to read
// it on; created says whether the queue is new.
func declare(conn *amqp.Connection, exchange, queue, key string) (*amqp.Channel, bool, error) {
	// A passive declaration of a missing queue closes its channel: it
	// gets one of its own.
	probe, err := conn.Channel()
	if err != nil {
		return nil, false, err
	}
	_, err = probe.QueueDeclarePassive(queue, true, false, false, false, nil)
	var aerr *amqp.Error
	created := errors.As(err, &aerr) && aerr.Code == amqp.NotFound
	if err != nil && !created {
		return nil, false, fmt.Errorf("queue %s: %w", queue, err)
	}
	if err == nil {
		probe.Close()
	}
	ch, err := conn.Channel()
	if err != nil {
		return nil, false, err
	}
	if exchange != "" {
		if err := ch.ExchangeDeclare(exchange, amqp.ExchangeTopic, true, false, false, false, nil); err != nil {
			return nil, false, fmt.Errorf("exchange %s: %w", exchange, err)
		}
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		return nil, false, fmt.Errorf("queue %s: %w", queue, err)
	}
	if exchange != "" {
		if err := ch.QueueBind(queue, key, exchange, false, nil); err != nil {
			return nil, created, fmt.Errorf("bind queue %s to %s by %q: %w", queue, exchange, key, err)
		}
	}
	return ch, created, nil
}

// openKafka reads topic from its start with a client of no group. The
// topic must exist (bench/kfake creates it). A record's id is its
// webhook-id header.
func openKafka(ctx context.Context, hosts, topic string, s *sink) (consumer, error) {
	if topic == "" {
		return nil, errors.New("want ?topic=T")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(hosts, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, err
	}
	return func(ctx context.Context) error {
		defer cl.Close()
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return nil
			}
			if errs := fs.Errors(); len(errs) > 0 {
				return fmt.Errorf("consume topic %s: %w", topic, errs[0].Err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				var id string
				for _, h := range r.Headers {
					if h.Key == headerWebhookID {
						id = string(h.Value)
					}
				}
				s.record(id, r.Value)
			})
		}
	}, nil
}
