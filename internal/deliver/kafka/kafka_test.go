package kafka_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/goleak"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/deliver/delivertest"
	_ "github.com/hookgate/hookgate/internal/deliver/kafka"
	"github.com/hookgate/hookgate/internal/deliver/kafka/kafkatest"
)

// TestMain checks that a closed sender leaves no goroutine of its client
// behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens the sender of d and closes it when t ends.
func open(t *testing.T, d config.Destination) deliver.Sender {
	t.Helper()
	s, err := deliver.Open(d)
	if err != nil {
		t.Fatalf("open %s: %v", d.Name, err)
	}
	t.Cleanup(func() {
		if c, ok := s.(interface{ Close() error }); ok {
			c.Close()
		} else {
			t.Errorf("the sender of %s has no Close", d.Name)
		}
	})
	return s
}

// closedAddr returns the address of a port nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// read reads topic until cond holds of what was read, or fails t after
// 20 seconds.
func read(t *testing.T, c *kafkatest.Cluster, topic string, cond func([]*kgo.Record) bool, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		got, err := c.Read(ctx, topic, opts...)
		cancel()
		if err != nil {
			t.Fatalf("read %s: %v", topic, err)
		}
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("read %d records of %s in 20s, not what was sent", len(got), topic)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ids(rs []*kgo.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, kafkatest.Header(r, "webhook-id"))
	}
	return out
}

func TestConformance(t *testing.T) {
	const topic = "shop.orders.created"
	delivertest.Exercise(t, delivertest.Kind{
		Open: func(t *testing.T) (deliver.Sender, func(context.Context) ([]delivertest.Received, error)) {
			// One partition, so that the records read back are in the
			// order they were produced.
			c := kafkatest.Start(t, kfake.SeedTopics(1, topic))
			send := open(t, config.Destination{Name: "log", URL: "kafka://" + c.Addr, Topic: "{source}.{type}"})
			return send, func(ctx context.Context) ([]delivertest.Received, error) {
				rs, err := c.Read(ctx, topic)
				var out []delivertest.Received
				for _, r := range rs {
					out = append(out, delivertest.Received{ID: kafkatest.Header(r, "webhook-id"), Payload: r.Value,
						Source: kafkatest.Header(r, "source"), Type: kafkatest.Header(r, "type"),
						Tenant: kafkatest.Header(r, "tenant"), Where: r.Topic})
				}
				return out, err
			}
		},
		Unreachable: func(t *testing.T) deliver.Sender {
			return open(t, config.Destination{Name: "log", URL: "kafka://" + closedAddr(t), Topic: "{source}.{type}",
				Timeout: config.Duration(2 * time.Second)})
		},
		Where: topic,
	})
}

// A record carries the event's id, content type, type, source and tenant
// and hookgate's headers as headers, the order key as its key and the
// payload as its value; the outcome's body says where it was written.
func TestRecord(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, kfake.SeedTopics(3, "hooks"))
	send := open(t, config.Destination{Name: "log", URL: "kafka://" + c.Addr, Topic: "hooks"})
	m := delivertest.Message("msg_record")
	m.ContentType = ""
	m.Headers = map[string]string{"X-Hookgate-Tenant": "acme", "X-Hookgate-Entity": "order/17", "X-Hookgate-Event-Id": "evt_1"}
	m.OrderKey = "acme/order/17"
	out := send.Send(t.Context(), m)
	if !out.Delivered || out.Err != nil || out.Code != 0 {
		t.Fatalf("Send = %+v, want delivered", out)
	}
	r := read(t, c, "hooks", func(rs []*kgo.Record) bool { return len(rs) > 0 })[0]
	if want := fmt.Sprintf("partition %d offset %d", r.Partition, r.Offset); out.Body != want {
		t.Errorf("Body = %q, want %q", out.Body, want)
	}
	if string(r.Key) != m.OrderKey || !bytes.Equal(r.Value, m.Payload) {
		t.Errorf("record key %q value %s, want %q and the payload", r.Key, r.Value, m.OrderKey)
	}
	var got []string
	for _, h := range r.Headers {
		got = append(got, h.Key+": "+string(h.Value))
	}
	want := []string{"webhook-id: msg_record", "content-type: application/json", "type: orders.created", "source: shop",
		"tenant: acme", "X-Hookgate-Entity: order/17", "X-Hookgate-Event-Id: evt_1", "X-Hookgate-Tenant: acme"}
	if !slices.Equal(got, want) {
		t.Errorf("headers\n%q\nwant\n%q", got, want)
	}
}

// Each entity's events go to one partition, in the order they were sent,
// while the entities spread over the topic's partitions.
func TestOneEntityOnePartition(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, kfake.SeedTopics(8, "hooks"))
	send := open(t, config.Destination{Name: "log", URL: "kafka://" + c.Addr, Topic: "hooks"})
	entities := []string{"acme/order/1", "acme/order/2", "acme/order/3", "globex/order/1"}
	const each = 10
	var wg sync.WaitGroup
	for _, e := range entities {
		wg.Go(func() {
			for i := range each {
				m := delivertest.Message(fmt.Sprintf("%s#%d", e, i))
				m.OrderKey = e
				if out := send.Send(t.Context(), m); !out.Delivered {
					t.Errorf("Send %s = %+v", m.WebhookID, out)
					return
				}
			}
		})
	}
	wg.Wait()
	rs := read(t, c, "hooks", func(rs []*kgo.Record) bool { return len(rs) >= len(entities)*each })
	partitions := map[string]int32{}
	order := map[string][]string{}
	for _, r := range rs {
		e := string(r.Key)
		if p, ok := partitions[e]; ok && p != r.Partition {
			t.Errorf("entity %s in partitions %d and %d", e, p, r.Partition)
		}
		partitions[e] = r.Partition
		order[e] = append(order[e], kafkatest.Header(r, "webhook-id"))
	}
	used := map[int32]bool{}
	for _, e := range entities {
		used[partitions[e]] = true
		var want []string
		for i := range each {
			want = append(want, fmt.Sprintf("%s#%d", e, i))
		}
		if !slices.Equal(order[e], want) {
			t.Errorf("entity %s read as %q, want %q", e, order[e], want)
		}
	}
	if len(used) < 2 {
		t.Errorf("%d entities all in one partition of 8: the key is not what partitions", len(entities))
	}
}

// A record the broker will never take (larger than a batch may be) and a
// topic name Kafka refuses are failures not worth another attempt.
func TestRefused(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, kfake.SeedTopics(1, "hooks"))
	send := open(t, config.Destination{Name: "log", URL: "kafka://" + c.Addr, Topic: "hooks", Timeout: config.Duration(5 * time.Second)})
	big := delivertest.Message("msg_big")
	big.Payload = bytes.Repeat([]byte("x"), 2<<20)
	if out := send.Send(t.Context(), big); out.Delivered || out.Retryable || out.Err == nil {
		t.Errorf("Send of 2 MiB = %+v, want refused", out)
	}
	byType := open(t, config.Destination{Name: "log", URL: "kafka://" + c.Addr, Topic: "hooks.{type}"})
	m := delivertest.Message("msg_slash")
	m.Type = "orders/create"
	if out := byType.Send(t.Context(), m); out.Delivered || out.Retryable || out.Err == nil || !strings.Contains(out.Err.Error(), "hooks.orders/create") {
		t.Errorf("Send to topic hooks.orders/create = %+v, want refused, naming the topic", out)
	}
}

// A user the broker does not let write to the topic may be granted it:
// the attempt fails retryably, and counts toward pausing the destination.
func TestNotAllowedIsRetried(t *testing.T) {
	t.Parallel()
	acl := func(resource kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: resource, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	c := kafkatest.Start(t, kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("PLAIN", "admin", "admin"),
		kfake.User("PLAIN", "app", "app-pass", acl(kmsg.ACLResourceTypeTopic, "hooks", kmsg.ACLOperationRead),
			acl(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLOperationIdempotentWrite)),
		kfake.SeedTopics(1, "hooks"))
	send := open(t, config.Destination{Name: "log", URL: "kafka://app@" + c.Addr + "?sasl=plain", Topic: "hooks",
		Password: config.NewSecret("app-pass"), Timeout: config.Duration(2 * time.Second)})
	out := send.Send(t.Context(), delivertest.Message("msg_denied"))
	if out.Delivered || !out.Retryable || out.Err == nil || !strings.Contains(out.Err.Error(), "TOPIC_AUTHORIZATION_FAILED") {
		t.Errorf("Send = %+v, want a retryable failure saying TOPIC_AUTHORIZATION_FAILED", out)
	}
}

// A topic that does not exist may be created later (or be a leader
// election away): the attempt fails, retryably, within its timeout.
func TestUnknownTopic(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t)
	send := open(t, config.Destination{Name: "log", URL: "kafka://" + c.Addr, Topic: "missing", Timeout: config.Duration(2 * time.Second)})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if out := send.Send(ctx, delivertest.Message("msg_lost")); out.Delivered || !out.Retryable || out.Err == nil || ctx.Err() != nil {
		t.Errorf("Send to a missing topic = %+v, want a retryable failure within the timeout", out)
	}
}

// A gateway starts while the broker is away: Open does not connect, Send
// fails retryably until the broker is back, and a record given up while
// it was away is not produced once it is.
func TestBrokerAwayAndBack(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, kfake.SeedTopics(1, "hooks"))
	c.Proxy.Cut()
	send := open(t, config.Destination{Name: "log", URL: "kafka://" + c.Addr, Topic: "hooks", Timeout: config.Duration(2 * time.Second)})
	if out := send.Send(t.Context(), delivertest.Message("msg_away")); out.Delivered || !out.Retryable || out.Err == nil {
		t.Fatalf("Send while the broker is away = %+v, want a retryable failure", out)
	}
	c.Proxy.Restore()
	sendUntilDelivered(t, send, delivertest.Message("msg_back"))
	if got := ids(read(t, c, "hooks", func(rs []*kgo.Record) bool { return len(rs) > 0 })); !slices.Equal(got, []string{"msg_back"}) {
		t.Errorf("read %q, want only msg_back", got)
	}
}

// A broker that stops answering with a record on the wire: Send gives up
// at its timeout, and the client drops the record instead of writing it
// again once the broker answers, which would produce an event its Send
// had reported undelivered (and the worker was retrying).
func TestHungRecordIsNotProducedLater(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, kfake.SeedTopics(1, "hooks"))
	send := open(t, config.Destination{Name: "log", URL: "kafka://" + c.Addr, Topic: "hooks", Timeout: config.Duration(2 * time.Second)})
	sendUntilDelivered(t, send, delivertest.Message("msg_before"))
	c.Proxy.Hang()
	if out := send.Send(t.Context(), delivertest.Message("msg_hung")); out.Delivered || !out.Retryable || out.Err == nil {
		t.Fatalf("Send to a broker that does not answer = %+v, want a retryable failure", out)
	}
	c.Proxy.Restore()
	sendUntilDelivered(t, send, delivertest.Message("msg_after"))
	got := ids(read(t, c, "hooks", func(rs []*kgo.Record) bool { return slices.Contains(ids(rs), "msg_after") }))
	if !slices.Equal(got, []string{"msg_before", "msg_after"}) {
		t.Errorf("read %q, want msg_before and msg_after, without the record given up", got)
	}
}

// sendUntilDelivered sends m until an attempt delivers it, as the worker
// would, for 30 seconds.
func sendUntilDelivered(t *testing.T, send deliver.Sender, m deliver.Message) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := send.Send(t.Context(), m)
		if out.Delivered {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Send %s for 30s: %+v", m.WebhookID, out)
		}
	}
}

// SASL with each mechanism, the password by reference; a wrong password
// fails without being shown.
func TestSASL(t *testing.T) {
	t.Parallel()
	const user, password = "hookgate", "s3cret-pass"
	for _, tc := range []struct {
		mechanism, param string
		reader           kgo.Opt
	}{
		{"PLAIN", "plain", kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism())},
		{"SCRAM-SHA-256", "scram-sha-256", kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism())},
		{"SCRAM-SHA-512", "scram-sha-512", kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism())},
	} {
		t.Run(tc.mechanism, func(t *testing.T) {
			t.Parallel()
			c := kafkatest.Start(t, kfake.EnableSASL(), kfake.Superuser(tc.mechanism, user, password), kfake.SeedTopics(1, "hooks"))
			d := config.Destination{Name: "log", URL: "kafka://" + user + "@" + c.Addr + "?sasl=" + tc.param, Topic: "hooks",
				Password: config.NewSecret(password), Timeout: config.Duration(3 * time.Second)}
			if out := open(t, d).Send(t.Context(), delivertest.Message("msg_sasl")); !out.Delivered {
				t.Fatalf("Send = %+v, want delivered", out)
			}
			read(t, c, "hooks", func(rs []*kgo.Record) bool { return len(rs) == 1 }, tc.reader)
			d.Password = config.NewSecret("wrong-" + password)
			out := open(t, d).Send(t.Context(), delivertest.Message("msg_wrong"))
			if out.Delivered || out.Err == nil {
				t.Fatalf("Send with a wrong password = %+v, want a failure", out)
			}
			if strings.Contains(out.Err.Error(), password) || strings.Contains(out.Body, password) {
				t.Errorf("the failure shows the password: %v %q", out.Err, out.Body)
			}
		})
	}
}

// Open refuses what it cannot use, naming the field, and never shows a
// password; it does not connect, so a broker that is down does not stop
// it.
func TestOpen(t *testing.T) {
	t.Parallel()
	pw := config.NewSecret("hunter2-secret")
	for _, tc := range []struct {
		url, topic string
		password   config.Secret
		want       string // "" means Open succeeds
	}{
		{"kafka://127.0.0.1:1,127.0.0.1:2?tls=1", "hooks", config.Secret{}, ""},
		{"kafka://broker?tls=false", "hooks.{source}.{type}", config.Secret{}, ""},
		{"kafka://hookgate@[::1]:9092?sasl=scram-sha-512&tls=true", "hooks", pw, ""},
		{"kafka://", "hooks", config.Secret{}, "no broker"},
		{"kafka://a:9092,,b:9092", "hooks", config.Secret{}, "empty broker"},
		{"kafka://a:9092,b:0", "hooks", config.Secret{}, `"b:0"`},
		{"kafka://a:9092/hooks", "hooks", config.Secret{}, "path"},
		{"kafka://a:9092#x", "hooks", config.Secret{}, "fragment"},
		{"kafka://a:9092?tls=maybe", "hooks", config.Secret{}, `tls: "maybe"`},
		{"kafka://a:9092?acks=1", "hooks", config.Secret{}, `unknown parameter "acks"`},
		{"kafka://a:9092?sasl=gssapi", "hooks", config.Secret{}, `sasl: "gssapi"`},
		{"kafka://a:9092?sasl=plain", "hooks", pw, "no user"},
		{"kafka://a:9092", "hooks", pw, "no user"},
		{"kafka://hookgate@a:9092", "hooks", pw, "sasl"},
		{"kafka://hookgate@a:9092?sasl=plain", "hooks", config.Secret{}, "no password"},
		{"kafka://hookgate:hunter2-secret@a:9092?sasl=plain", "hooks", config.Secret{}, "password"},
		{"kafka://a:9092", "", config.Secret{}, "topic"},
		{"kafka://a:9092", "hooks {type}", config.Secret{}, `"hooks {type}"`},
	} {
		d := config.Destination{Name: "log", URL: tc.url, Topic: tc.topic, Password: tc.password}
		s, err := deliver.Open(d)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Open %s: %v", tc.url, err)
		case tc.want == "":
			s.(interface{ Close() error }).Close()
		case err == nil:
			s.(interface{ Close() error }).Close()
			t.Errorf("Open %s topic %q: no error, want one saying %s", tc.url, tc.topic, tc.want)
		case !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "destination log: "):
			t.Errorf("Open %s topic %q: %v, want destination log: ...%s...", tc.url, tc.topic, err, tc.want)
		case strings.Contains(err.Error(), "hunter2"):
			t.Errorf("Open %s: %v shows the password", tc.url, err)
		}
	}
}
