package cli_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/internal/source"
)

// rabbitURL is the RabbitMQ the tests use: HOOKGATE_TEST_AMQP, or the
// local one.
func rabbitURL() string {
	if u := os.Getenv("HOOKGATE_TEST_AMQP"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// rabbitQueue is a topic exchange and a queue bound to it by a key, of
// the test's own, deleted when it ends; read consumes the queue.
type rabbitQueue struct {
	ch       *amqp.Channel
	exchange string

	mu  sync.Mutex
	got []amqp.Delivery
}

// newRabbitQueue declares the exchange and the queue bound to it by
// binding. When RabbitMQ cannot be reached t is skipped, unless
// HOOKGATE_REQUIRE_SERVICES=1, where it fails.
func newRabbitQueue(t *testing.T, binding string) *rabbitQueue {
	t.Helper()
	conn, err := amqp.DialConfig(rabbitURL(), amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		if pgtest.Required() {
			t.Fatalf("RabbitMQ unavailable and HOOKGATE_REQUIRE_SERVICES=1: %v", err)
		}
		t.Skipf("RabbitMQ unavailable (set HOOKGATE_TEST_AMQP or start it): %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	q := &rabbitQueue{ch: ch, exchange: "hookgate-e2e-" + hex.EncodeToString(b)}
	if err := ch.ExchangeDeclare(q.exchange, amqp.ExchangeTopic, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.ExchangeDelete(q.exchange, false, false) })
	if _, err := ch.QueueDeclare(q.exchange, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.QueueDelete(q.exchange, false, false, false) })
	if err := ch.QueueBind(q.exchange, binding, q.exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	return q
}

// read returns every message the queue has had so far, in order.
func (q *rabbitQueue) read(t *testing.T) []amqp.Delivery {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		d, ok, err := q.ch.Get(q.exchange, true)
		if err != nil {
			t.Fatalf("read the queue: %v", err)
		}
		if !ok {
			return append([]amqp.Delivery(nil), q.got...)
		}
		q.got = append(q.got, d)
	}
}

// rabbitEvent is a message as the consumer read it: the id it carries
// and the provider event id its body names.
type rabbitEvent struct{ id, eventID, typ string }

// events reads the queue and returns what each message is.
func (q *rabbitQueue) events(t *testing.T) []rabbitEvent {
	t.Helper()
	var out []rabbitEvent
	for _, d := range q.read(t) {
		var body struct {
			Data struct {
				N string `json:"n"`
			} `json:"data"`
		}
		if err := json.Unmarshal(d.Body, &body); err != nil {
			t.Fatalf("a message's body %q: %v", d.Body, err)
		}
		typ, _ := d.Headers["type"].(string)
		out = append(out, rabbitEvent{id: d.MessageId, eventID: body.Data.N, typ: typ})
	}
	return out
}

// rabbitDistinct counts the distinct event ids of events.
func rabbitDistinct(events []rabbitEvent) int {
	seen := map[string]bool{}
	for _, e := range events {
		seen[e.eventID] = true
	}
	return len(seen)
}

// rabbitSend posts an event of type typ with webhook-id id, signed for the
// app source.
func rabbitSend(ctx context.Context, client *http.Client, src *source.Source, base, id, typ string) (int, error) {
	body := fmt.Appendf(nil, `{"type":%q,"data":{"n":%q}}`, typ, id)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/in/app", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("webhook-id", id)
	if err := src.Signer().Sign(req, body); err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// rabbitListed is an event as `hookgate events list --json` prints it.
type rabbitListed struct {
	ID        int64  `json:"id"`
	Key       string `json:"key"`
	EventID   string `json:"event_id"`
	Status    string `json:"status"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
}

// rabbitList runs `hookgate events list --json` with args on the
// configuration at path.
func rabbitList(t *testing.T, path string, args ...string) []rabbitListed {
	t.Helper()
	out, err := command(t, append([]string{"events", "list", "--json", "--limit", "1000", "--config", path}, args...)...).Output()
	if err != nil {
		t.Fatalf("hookgate events list: %v", err)
	}
	var events []rabbitListed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var e rabbitListed
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("hookgate events list: %v", err)
		}
		events = append(events, e)
	}
	return events
}

// rabbitAttempts runs `hookgate events show --json` on event id and returns
// the attempt log of its delivery to dest.
func rabbitAttempts(t *testing.T, path string, id int64, dest string) []struct{ Error, Body string } {
	t.Helper()
	out, err := command(t, "events", "show", "--json", "--config", path, fmt.Sprint(id)).Output()
	if err != nil {
		t.Fatalf("hookgate events show: %v", err)
	}
	var ev struct {
		Deliveries []struct {
			Destination string
			Log         []struct{ Error, Body string }
		}
	}
	if err := json.Unmarshal(out, &ev); err != nil {
		t.Fatalf("hookgate events show %s: %v", out, err)
	}
	for _, d := range ev.Deliveries {
		if d.Destination == dest {
			return d.Log
		}
	}
	t.Fatalf("event %d has no delivery to %s: %s", id, dest, out)
	return nil
}

// rabbitLane returns the state, failures and last error of the delivery
// to dest, as `hookgate stats --json` prints them.
func rabbitLane(t *testing.T, path, dest string) (state string, failures int, lastError string) {
	t.Helper()
	out, err := command(t, "stats", "--json", "--config", path).Output()
	if err != nil {
		t.Fatalf("hookgate stats: %v", err)
	}
	var st struct {
		Lanes []struct {
			Destination string `json:"destination"`
			State       string `json:"state"`
			Failures    int    `json:"failures"`
			LastError   string `json:"last_error"`
		} `json:"lanes"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("hookgate stats %s: %v", out, err)
	}
	for _, l := range st.Lanes {
		if l.Destination == dest {
			return l.State, l.Failures, l.LastError
		}
	}
	return "", 0, ""
}

// rabbitMaxInFlight is the bus destination's max_in_flight: how many
// deliveries may be in flight when the broker is cut off, and so how
// many messages it may hold twice.
const rabbitMaxInFlight = 4

// Through a real serve and the local RabbitMQ behind a proxy: 50 events
// are read back once each, carrying their key as MessageId; events of a
// type routed to no queue are retried and then dead, never delivered;
// then the broker is cut off while events flow: they are still
// accepted, the attempts fail and are recorded, the destination pauses,
// and once the broker is back every event arrives, under the same id,
// with at most the in-flight count read twice.
func TestRabbitMQThroughServe(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	q := newRabbitQueue(t, "app.#")
	broker, err := url.Parse(rabbitURL())
	if err != nil {
		t.Fatal(err)
	}
	password, _ := broker.User.Password()
	proxy, addr := pgtest.NewTCPProxy(t, broker.Host)
	dest := url.URL{Scheme: broker.Scheme, User: url.User(broker.User.Username()), Host: addr, Path: broker.Path}
	dir := t.TempDir()
	for file, v := range map[string]string{"secret": crashSecret, "rabbit-password": password} {
		if err := os.WriteFile(dir+"/"+file, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := dir + "/hookgate.yaml"
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
database: sqlite:%[1]s/hookgate.db
workers: 2
lease: 10s
sources:
  - name: app
    provider: standard
    secret: file:%[1]s/secret
    scope: [const:order, json:type]
    destinations:
      - name: bus
        url: %[2]s
        password: file:%[1]s/rabbit-password
        exchange: %[3]s
        types: [order.created]
        timeout: 5s
        max_in_flight: %[4]d
        retry_initial: 50ms
        retry_max_delay: 500ms
        pause_after: 3
        pause_for: 500ms
      - name: lost
        url: %[2]s
        password: file:%[1]s/rabbit-password
        exchange: %[3]s
        routing_key: "lost.{type}"
        types: [order.lost]
        timeout: 5s
        max_attempts: 2
        retry_initial: 50ms
        retry_max_delay: 500ms
        pause_after: 0
`, dir, dest.String(), q.exchange, rabbitMaxInFlight)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, "--config", path)
	src := signer(t)
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(id, typ string) error {
		st, err := rabbitSend(t.Context(), client, src, p.addr, id, typ)
		if err == nil && st != http.StatusAccepted {
			err = fmt.Errorf("answered %d", st)
		}
		if err != nil {
			return fmt.Errorf("send %s: %w", id, err)
		}
		return nil
	}

	for i := range 50 {
		if err := post(fmt.Sprintf("evt_a%02d", i), "order.created"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if err := post(fmt.Sprintf("evt_lost%d", i), "order.lost"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "50 events read", func() bool { return rabbitDistinct(q.events(t)) == 50 })
	eventually(t, "50 events processed", func() bool { return len(rabbitList(t, path, "--status", "processed")) == 50 })
	if got := q.events(t); len(got) != 50 {
		t.Errorf("read %d messages of 50 events, want each once", len(got))
	}

	// An unroutable event: each attempt returned, then dead, never read.
	var dead []rabbitListed
	eventually(t, "the unroutable events dead", func() bool {
		dead = rabbitList(t, path, "--status", "dead")
		return len(dead) == 3
	})
	for _, e := range dead {
		if e.Attempts != 2 || !strings.Contains(e.LastError, "unroutable") {
			t.Errorf("dead event %s: %d attempts, last error %q; want 2 attempts, unroutable", e.EventID, e.Attempts, e.LastError)
		}
	}
	for _, a := range rabbitAttempts(t, path, dead[0].ID, "lost") {
		if !strings.Contains(a.Error, "unroutable") || !strings.Contains(a.Body, "NO_ROUTE") {
			t.Errorf("an attempt of an unroutable event logged %+v, want unroutable, NO_ROUTE", a)
		}
	}

	// The broker cut off once ten more events are accepted, while they
	// are delivered: the other 40 are sent while it is.
	ten, cut, sent := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		for i := range 50 {
			if i == 10 {
				close(ten)
				<-cut
			}
			if err := post(fmt.Sprintf("evt_b%02d", i), "order.created"); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	select {
	case <-ten:
	case err := <-sent:
		t.Fatal(err)
	}
	proxy.Cut()
	close(cut)
	if err := <-sent; err != nil {
		t.Fatalf("with the broker cut off: %v", err)
	}
	eventually(t, "the destination paused", func() bool {
		state, failures, lastError := rabbitLane(t, path, "bus")
		return state == "paused" && failures >= 3 && strings.Contains(lastError, "deliver to bus")
	})
	failing := 0
	for _, e := range rabbitList(t, path) {
		if strings.Contains(e.LastError, "bus: deliver to bus") {
			failing++
		}
	}
	if failing == 0 {
		t.Error("no event delivering records the failed attempts of the cut")
	}

	proxy.Restore()
	eventually(t, "100 events read", func() bool { return rabbitDistinct(q.events(t)) == 100 })
	var processed []rabbitListed
	eventually(t, "100 events processed", func() bool {
		processed = rabbitList(t, path, "--status", "processed")
		return len(processed) == 100
	})
	keys := map[string]string{}
	retried := int64(0)
	for _, e := range processed {
		keys[e.EventID] = e.Key
		if e.Attempts > 1 && retried == 0 {
			retried = e.ID
		}
	}
	got := q.events(t)
	for _, e := range got {
		if e.id != keys[e.eventID] || e.typ != "order.created" {
			t.Errorf("read %s as %s, type %q; want its key %s, type order.created", e.eventID, e.id, e.typ, keys[e.eventID])
		}
	}
	t.Logf("read %d messages of 100 events", len(got))
	if dups := len(got) - 100; dups > rabbitMaxInFlight {
		t.Errorf("read %d messages of 100 events: %d twice, more than the %d in flight", len(got), dups, rabbitMaxInFlight)
	}
	if retried == 0 {
		t.Fatal("no processed event took more than one attempt")
	}
	log := rabbitAttempts(t, path, retried, "bus")
	if len(log) < 2 || !strings.Contains(log[0].Error, "deliver to bus") || log[len(log)-1].Body != "confirmed" {
		t.Errorf("attempt log of event %d: %+v, want failed attempts then confirmed", retried, log)
	}
}
