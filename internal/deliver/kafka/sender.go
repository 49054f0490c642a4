package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
)

func init() { deliver.Register(config.KindKafka, open) }

// Sender produces each message as one record to its destination's topic.
// It is safe for concurrent use.
type Sender struct {
	name string
	// topic is the destination's topic template.
	topic   string
	timeout time.Duration
	client  *kgo.Client
}

var (
	_ deliver.Sender = (*Sender)(nil)
	_ io.Closer      = (*Sender)(nil)
)

// topicName is what Kafka takes as a topic's name.
var topicName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

func validTopic(topic string) bool {
	return topicName.MatchString(topic) && topic != "." && topic != ".."
}

// open returns the sender of d, a kafka:// destination. It does not
// connect: the client connects at the first attempt, and again whenever
// it lost the broker, so that a gateway starts while Kafka is away.
func open(d config.Destination) (deliver.Sender, error) {
	if d.Topic == "" {
		return nil, fmt.Errorf("destination %s: topic: required for a kafka destination", d.Name)
	}
	if !validTopic(config.Fill(d.Topic, "s", "t", "y")) {
		return nil, fmt.Errorf("destination %s: topic %q: want letters, digits, '.', '_' and '-' besides {source}, {tenant} and {type}", d.Name, d.Topic)
	}
	timeout := time.Duration(d.Timeout)
	if timeout <= 0 {
		timeout = deliver.DefaultTimeout
	}
	opts, err := clientOptions(d)
	if err != nil {
		return nil, fmt.Errorf("destination %s: %w", d.Name, err)
	}
	opts = append(opts,
		kgo.ClientID("hookgate"),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// An attempt that gave up has reported its event undelivered, and
		// the worker will send it again: its record is failed in the
		// client even when it was on the wire, rather than kept and
		// written once the broker answers, a copy nobody waits for. (The
		// idempotent producer still dedupes its own resends of a request.)
		kgo.AllowIdempotentProduceCancellation(),
		// Records no attempt waits for any more leave the buffer when
		// their attempt's context ends, or at the latest after the
		// attempt's timeout (franz-go takes no less than a second).
		kgo.RecordDeliveryTimeout(max(timeout, time.Second)),
		kgo.ProduceRequestTimeout(max(timeout, 100*time.Millisecond)),
	)
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("destination %s: %w", d.Name, err)
	}
	return &Sender{name: d.Name, topic: d.Topic, timeout: timeout, client: client}, nil
}

// Send produces m and waits for the acknowledgement, at most the
// destination's timeout.
func (s *Sender) Send(ctx context.Context, m deliver.Message) deliver.Outcome {
	start := time.Now()
	out := s.send(ctx, m)
	out.Duration = time.Since(start)
	return out
}

func (s *Sender) send(ctx context.Context, m deliver.Message) deliver.Outcome {
	topic := config.Fill(s.topic, m.Source, m.Tenant, m.Type)
	if !validTopic(topic) {
		return deliver.Outcome{Err: fmt.Errorf("deliver to %s: topic %q: not a Kafka topic name (letters, digits, '.', '_' and '-', at most 249)", s.name, topic)}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// A context that already ended hands nothing to the client, which
	// could produce it after Send returned.
	if err := ctx.Err(); err != nil {
		return deliver.Outcome{Retryable: true, Err: fmt.Errorf("deliver to %s: %w", s.name, err)}
	}
	r := &kgo.Record{Topic: topic, Key: []byte(m.OrderKey), Value: m.Payload, Headers: headers(m)}
	acked := make(chan error, 1)
	s.client.Produce(ctx, r, func(_ *kgo.Record, err error) { acked <- err })
	select {
	case err := <-acked:
		return s.outcome(r, err)
	case <-ctx.Done():
		// An acknowledgement that came with the deadline is still one.
		select {
		case err := <-acked:
			return s.outcome(r, err)
		default:
		}
		return deliver.Outcome{Retryable: true, Err: fmt.Errorf("deliver to %s: topic %s: no acknowledgement: %w", s.name, topic, ctx.Err())}
	}
}

// outcome is how the produce of r ended with err; r's partition and
// offset are set once err is nil.
func (s *Sender) outcome(r *kgo.Record, err error) deliver.Outcome {
	if err == nil {
		return deliver.Outcome{Delivered: true, Body: fmt.Sprintf("partition %d offset %d", r.Partition, r.Offset)}
	}
	return deliver.Outcome{Retryable: !refused(err), Err: fmt.Errorf("deliver to %s: topic %s: %w", s.name, r.Topic, err)}
}

// refusals are the broker's answers about the record itself, which it
// will give on every attempt: too large, invalid, or for a topic name
// Kafka does not take. Everything else is retried, as what is wrong is
// on the broker and may be put right there: a topic that does not exist
// yet (or whose leader is moving), refused credentials, a user not
// allowed to write to the topic; their failures count toward pausing the
// destination.
var refusals = []error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord, kerr.InvalidTopicException}

func refused(err error) bool {
	return slices.ContainsFunc(refusals, func(r error) bool { return errors.Is(err, r) })
}

// headers are m's record headers: its id, content type, type, source and
// tenant, then hookgate's headers by name.
func headers(m deliver.Message) []kgo.RecordHeader {
	ct := m.ContentType
	if ct == "" {
		ct = "application/json"
	}
	hs := []kgo.RecordHeader{
		{Key: "webhook-id", Value: []byte(m.WebhookID)},
		{Key: "content-type", Value: []byte(ct)},
		{Key: "type", Value: []byte(m.Type)},
		{Key: "source", Value: []byte(m.Source)},
		{Key: "tenant", Value: []byte(m.Tenant)},
	}
	for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
		hs = append(hs, kgo.RecordHeader{Key: k, Value: []byte(m.Headers[k])})
	}
	return hs
}

// Close closes the client. Records still buffered, whose attempts have
// all ended, are dropped, not produced.
func (s *Sender) Close() error {
	s.client.Close()
	return nil
}
