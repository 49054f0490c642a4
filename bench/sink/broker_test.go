package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
	_ "github.com/hookgate/hookgate/internal/deliver/kafka"
	"github.com/hookgate/hookgate/internal/deliver/kafka/kafkatest"
	_ "github.com/hookgate/hookgate/internal/deliver/natsjs"
	"github.com/hookgate/hookgate/internal/deliver/natsjs/natsjstest"
	_ "github.com/hookgate/hookgate/internal/deliver/rabbitmq"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// suffix is a random name part, so that tests sharing a broker do not
// meet.
func suffix() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// sender opens hookgate's own sender of d, so that the sink reads what
// hookgate publishes, and closes it when t ends.
func sender(t *testing.T, d config.Destination) deliver.Sender {
	t.Helper()
	d.Timeout = config.Duration(10 * time.Second)
	s, err := deliver.Open(d)
	if err != nil {
		t.Fatalf("open %s: %v", d.URL, err)
	}
	t.Cleanup(func() { s.(interface{ Close() error }).Close() })
	return s
}

// send delivers events ev-from .. ev-(to-1), stamped, through s.
func send(t *testing.T, s deliver.Sender, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		id := fmt.Sprintf("ev-%d", i)
		m := deliver.Message{WebhookID: id, Payload: []byte(stamped(0)), ContentType: "application/json",
			Source: "shop", Type: "orders.created", OrderKey: id}
		if out := s.Send(t.Context(), m); !out.Delivered {
			t.Fatalf("send %s: %v", id, out.Err)
		}
	}
}

// consume opens the sink's consumer of from and runs it; stop ends it and
// returns its error.
func consume(t *testing.T, from string) (s *sink, stop func() error) {
	t.Helper()
	s = newSink(time.Now)
	c, err := openBroker(from, s)
	if err != nil {
		t.Fatalf("openBroker: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c(ctx) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = stop() })
	return s, stop
}

// waitDistinct polls s until it has counted n distinct events, failing t
// after 30 s.
func waitDistinct(t *testing.T, s *sink, n int) stats {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		st := s.stats()
		if st.Distinct >= n {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink counted %d distinct events in 30 s, want %d", st.Distinct, n)
		}
		<-tick.C
	}
}

// checkCounted checks that s counted n deliveries of n events, every one
// stamped, and refuses to hold.
func checkCounted(t *testing.T, s *sink, n int) {
	t.Helper()
	st := waitDistinct(t, s, n)
	if st.Deliveries != n || st.Distinct != n || st.Unstamped != 0 {
		t.Errorf("stats %+v, want %d deliveries of %d events, all stamped", st, n, n)
	}
	for _, path := range []string{"/hold", "/release"} {
		rec := httptest.NewRecorder()
		s.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "HTTP-only") {
			t.Errorf("POST %s consuming from a broker = %d %q, want 400 HTTP-only", path, rec.Code, rec.Body.String())
		}
	}
}

func TestNATS(t *testing.T) {
	t.Parallel()
	js := natsjstest.Connect(t)
	addr := natsjstest.Addr(t)
	t.Run("CreatesTheStream", func(t *testing.T) {
		t.Parallel()
		name, prefix := "SINK"+suffix(), "sink"+suffix()
		s, stop := consume(t, fmt.Sprintf("nats://%s?stream=%s&subject=%s.>", addr, name, prefix))
		send(t, sender(t, config.Destination{Name: "bus", URL: natsjstest.URL(), Subject: prefix + ".{type}"}), 0, 30)
		checkCounted(t, s, 30)
		if err := stop(); err != nil {
			t.Fatalf("stop: %v", err)
		}
		if _, err := js.Stream(t.Context(), name); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("the stream the sink created, after it stopped: %v, want not found", err)
		}
	})
	t.Run("ReadsAStreamFromItsStart", func(t *testing.T) {
		t.Parallel()
		st := natsjstest.NewStream(t, js, 0)
		send := func(from, to int) {
			send(t, sender(t, config.Destination{Name: "bus", URL: natsjstest.URL(), Subject: st.Prefix + ".{type}"}), from, to)
		}
		send(0, 10)
		s, stop := consume(t, fmt.Sprintf("nats://%s?stream=%s&subject=%s.>", addr, st.CachedInfo().Config.Name, st.Prefix))
		send(10, 20)
		checkCounted(t, s, 20)
		if err := stop(); err != nil {
			t.Fatalf("stop: %v", err)
		}
		if n, err := st.Count(t.Context()); err != nil || n != 20 {
			t.Errorf("a stream the sink did not create, after it stopped: %d messages, %v; want 20 kept", n, err)
		}
	})
}

// amqpURL is the RabbitMQ the test uses (HOOKGATE_TEST_AMQP, by default
// the local one); the test is skipped when it cannot be reached, unless
// services are required.
func amqpURL(t *testing.T) *url.URL {
	t.Helper()
	raw := os.Getenv("HOOKGATE_TEST_AMQP")
	if raw == "" {
		raw = "amqp://guest:guest@127.0.0.1:5672/"
	}
	conn, err := amqp.DialConfig(raw, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		pgtest.Unavailable(t, "RabbitMQ", err)
	}
	conn.Close()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestAMQP(t *testing.T) {
	t.Parallel()
	u := amqpURL(t)
	exchange, queue := "sink-"+suffix(), "sink-"+suffix()
	from := *u
	from.RawQuery = url.Values{"exchange": {exchange}, "queue": {queue}, "key": {"shop.#"}}.Encode()
	s, stop := consume(t, from.String())

	// hookgate takes the password by reference, never in the URL.
	pass, _ := u.User.Password()
	to := *u
	to.User = url.User(u.User.Username())
	send(t, sender(t, config.Destination{Name: "bus", URL: to.String(), Password: config.NewSecret(pass),
		Exchange: exchange, RoutingKey: "{source}.{type}"}), 0, 30)
	checkCounted(t, s, 30)
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	conn, err := amqp.Dial(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDelete(exchange, false, false); err != nil {
		t.Errorf("delete exchange %s: %v", exchange, err)
	}
	if _, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil); err == nil {
		t.Errorf("queue %s, which the sink declared, is there after it stopped", queue)
	}
}

func TestKafka(t *testing.T) {
	t.Parallel()
	c := kafkatest.Start(t, kfake.SeedTopics(2, "hooks"))
	send := func(from, to int) {
		send(t, sender(t, config.Destination{Name: "log", URL: "kafka://" + c.Addr, Topic: "hooks"}), from, to)
	}
	send(0, 10)
	s, _ := consume(t, "kafka://"+c.Addr+"?topic=hooks")
	send(10, 30)
	checkCounted(t, s, 30)
}

func TestOpenBrokerRefuses(t *testing.T) {
	t.Parallel()
	for _, from := range []string{
		"http://127.0.0.1:1/",
		"nats://127.0.0.1:1?subject=a.>",
		"amqp://guest:guest@127.0.0.1:1/?exchange=x&queue=q",
		"kafka://127.0.0.1:1",
	} {
		if _, err := openBroker(from, newSink(time.Now)); err == nil {
			t.Errorf("openBroker(%q) = nil error, want refused", from)
		}
	}
}
