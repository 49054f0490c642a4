package rabbitmq_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/goleak"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/deliver/delivertest"
	"github.com/hookgate/hookgate/internal/deliver/rabbitmq"
	"github.com/hookgate/hookgate/internal/pgtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// defaultURL is the broker tests use when HOOKGATE_TEST_AMQP is unset.
const defaultURL = "amqp://guest:guest@127.0.0.1:5672/"

func brokerURL() string {
	if u := os.Getenv("HOOKGATE_TEST_AMQP"); u != "" {
		return u
	}
	return defaultURL
}

// broker connects the test to RabbitMQ, which it closes when t ends. When
// the broker cannot be reached t is skipped, unless
// HOOKGATE_REQUIRE_SERVICES=1, where it fails.
func broker(t *testing.T) *amqp.Connection {
	t.Helper()
	conn, err := amqp.DialConfig(brokerURL(), amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		if pgtest.Required() {
			t.Fatalf("RabbitMQ unavailable and HOOKGATE_REQUIRE_SERVICES=1: %v", err)
		}
		t.Skipf("RabbitMQ unavailable (set HOOKGATE_TEST_AMQP or start it): %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// place is an exchange of the test's own on the broker, with a queue bound
// to it (or none), both deleted when the test ends.
type place struct {
	t        *testing.T
	ch       *amqp.Channel
	exchange string
	queue    string

	mu  sync.Mutex
	got []amqp.Delivery
}

// newPlace declares a topic exchange and, when binding is not empty, a
// queue bound to it by that key, declared with args.
func newPlace(t *testing.T, binding string, args amqp.Table) *place {
	t.Helper()
	ch, err := broker(t).Channel()
	if err != nil {
		t.Fatal(err)
	}
	name := "hookgate-test-" + suffix()
	p := &place{t: t, ch: ch, exchange: name}
	if err := ch.ExchangeDeclare(name, amqp.ExchangeTopic, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.ExchangeDelete(name, false, false) })
	if binding != "" {
		p.bind(binding, args)
	}
	return p
}

// bind declares the place's queue and binds it to the exchange by key.
func (p *place) bind(key string, args amqp.Table) {
	p.t.Helper()
	q, err := p.ch.QueueDeclare(p.exchange, false, false, false, false, args)
	if err != nil {
		p.t.Fatal(err)
	}
	p.queue = q.Name
	p.t.Cleanup(func() { p.ch.QueueDelete(q.Name, false, false, false) })
	if err := p.ch.QueueBind(q.Name, key, p.exchange, false, nil); err != nil {
		p.t.Fatal(err)
	}
}

// read returns every message the queue has had so far, in order.
func (p *place) read(context.Context) ([]amqp.Delivery, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		d, ok, err := p.ch.Get(p.queue, true)
		if err != nil || !ok {
			return append([]amqp.Delivery(nil), p.got...), err
		}
		p.got = append(p.got, d)
	}
}

// received is read as the conformance suite sees it.
func (p *place) received(ctx context.Context) ([]delivertest.Received, error) {
	ds, err := p.read(ctx)
	out := make([]delivertest.Received, len(ds))
	for i, d := range ds {
		out[i] = delivertest.Received{ID: d.MessageId, Payload: d.Body, Source: header(d, "source"),
			Type: header(d, "type"), Tenant: header(d, "tenant"), Where: d.RoutingKey}
	}
	return out, err
}

func header(d amqp.Delivery, name string) string {
	s, _ := d.Headers[name].(string)
	return s
}

// destination is a destination publishing to exchange on the test broker
// at rawURL, by "{source}.{type}".
func destination(rawURL, exchange string) config.Destination {
	return config.Destination{Name: "rabbit", URL: rawURL, Exchange: exchange, RoutingKey: "{source}.{type}",
		Timeout: config.Duration(5 * time.Second)}
}

// open opens d's sender and closes it when t ends.
func open(t *testing.T, d config.Destination) deliver.Sender {
	t.Helper()
	s, err := deliver.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.(interface{ Close() error }).Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func suffix() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// withHost returns the test broker's URL with host instead of its own.
func withHost(t *testing.T, host string) string {
	t.Helper()
	u, err := url.Parse(brokerURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Host = host
	return u.String()
}

// waitFor polls cond until it holds, failing t after 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestConformance(t *testing.T) {
	broker(t)
	delivertest.Exercise(t, delivertest.Kind{
		Open: func(t *testing.T) (deliver.Sender, func(context.Context) ([]delivertest.Received, error)) {
			p := newPlace(t, "#", nil)
			return open(t, destination(brokerURL(), p.exchange)), p.received
		},
		Unreachable: func(t *testing.T) deliver.Sender {
			d := destination(withHost(t, closedPort(t)), "hooks")
			d.Timeout = config.Duration(2 * time.Second)
			return open(t, d)
		},
		Where: "shop.orders.created",
	})
}

// What a consumer gets besides the body: the id, persistence, the content
// type, the event's type, source and tenant, the message's own headers and
// the time it was published.
func TestPublishing(t *testing.T) {
	t.Parallel()
	p := newPlace(t, "#", nil)
	send := open(t, destination(brokerURL(), p.exchange))
	m := delivertest.Message("msg_props")
	m.ContentType = "application/xml"
	before := time.Now().Truncate(time.Second)
	out := send.Send(t.Context(), m)
	if !out.Delivered || out.Retryable || out.Err != nil || out.Code != 0 || out.Body != "confirmed" || out.Duration <= 0 {
		t.Fatalf("Send = %+v, want delivered, confirmed", out)
	}
	var got []amqp.Delivery
	waitFor(t, "the message", func() bool {
		var err error
		got, err = p.read(t.Context())
		return err == nil && len(got) > 0
	})
	d := got[0]
	if d.MessageId != "msg_props" || d.DeliveryMode != amqp.Persistent || d.ContentType != "application/xml" ||
		d.Type != "orders.created" || d.AppId != "hookgate" || d.Timestamp.Before(before) {
		t.Errorf("properties: id %q, delivery mode %d, content type %q, type %q, app %q, timestamp %v",
			d.MessageId, d.DeliveryMode, d.ContentType, d.Type, d.AppId, d.Timestamp)
	}
	want := map[string]string{"webhook-id": "msg_props", "type": "orders.created", "source": "shop", "tenant": "acme",
		"X-Hookgate-Source": "shop"}
	for k, v := range want {
		if header(d, k) != v {
			t.Errorf("header %s = %v, want %q", k, d.Headers[k], v)
		}
	}
	if len(d.Headers) != len(want) {
		t.Errorf("headers %v, want %v", d.Headers, want)
	}
}

// An exchange that routes the message to no queue returns it (mandatory):
// not delivered, and retryable, for it will route once a queue is bound;
// then the same message goes through.
func TestUnroutable(t *testing.T) {
	t.Parallel()
	p := newPlace(t, "", nil)
	send := open(t, destination(brokerURL(), p.exchange))
	out := send.Send(t.Context(), delivertest.Message("msg_nowhere"))
	if out.Delivered || !out.Retryable || out.Err == nil || !strings.Contains(out.Err.Error(), "unroutable") ||
		!strings.Contains(out.Err.Error(), "shop.orders.created") || !strings.Contains(out.Body, "NO_ROUTE") {
		t.Fatalf("Send with no queue bound = %+v, want a retryable failure saying unroutable", out)
	}
	p.bind("shop.#", nil)
	if out := send.Send(t.Context(), delivertest.Message("msg_nowhere")); !out.Delivered {
		t.Fatalf("Send once a queue is bound = %+v, want delivered", out)
	}
	got, err := p.read(t.Context())
	if err != nil || len(got) != 1 || got[0].MessageId != "msg_nowhere" {
		t.Errorf("the queue holds %d messages (%v), want the one sent after binding", len(got), err)
	}
}

// Messages in flight at once on one sender, some routable and some not,
// each get their own answer: a return or a confirm is never taken for
// another message's, as the channels go from one message to the next.
func TestReturnsReachTheirSend(t *testing.T) {
	t.Parallel()
	p := newPlace(t, "shop.#", nil)
	send := open(t, destination(brokerURL(), p.exchange))
	const senders, each = 8, 40
	outs := make([]deliver.Outcome, senders*each)
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for j := range each {
				i := g*each + j
				m := delivertest.Message(fmt.Sprintf("msg_%03d", i))
				if i%2 == 1 {
					m.Source = "nobody"
				}
				outs[i] = send.Send(t.Context(), m)
			}
		})
	}
	wg.Wait()
	for i, out := range outs {
		if routable := i%2 == 0; out.Delivered != routable || !routable && !strings.Contains(out.Err.Error(), "nobody.orders.created") {
			t.Errorf("Send %d (routable: %v) = %+v", i, routable, out)
		}
	}
	got, err := p.read(t.Context())
	if err != nil || len(got) != len(outs)/2 {
		t.Fatalf("the queue holds %d messages (%v), want %d", len(got), err, len(outs)/2)
	}
	for _, d := range got {
		var i int
		if _, err := fmt.Sscanf(d.MessageId, "msg_%d", &i); err != nil || i%2 != 0 {
			t.Errorf("an unroutable message reached the queue: %s", d.MessageId)
		}
	}
}

// A message the broker refuses (a full queue that rejects new messages)
// is nacked: not delivered, worth another attempt.
func TestNack(t *testing.T) {
	t.Parallel()
	p := newPlace(t, "#", amqp.Table{"x-max-length": int32(0), "x-overflow": "reject-publish"})
	send := open(t, destination(brokerURL(), p.exchange))
	out := send.Send(t.Context(), delivertest.Message("msg_refused"))
	if out.Delivered || !out.Retryable || out.Err == nil || !strings.Contains(out.Err.Error(), "nack") {
		t.Fatalf("Send to a queue that rejects it = %+v, want a retryable failure saying nack", out)
	}
	// The sender goes on publishing on the same connection.
	p.ch.QueueDelete(p.queue, false, false, false)
	p.bind("#", nil)
	if out := send.Send(t.Context(), delivertest.Message("msg_later")); !out.Delivered {
		t.Errorf("Send after the nack = %+v, want delivered", out)
	}
}

// An exchange that does not exist makes the broker close the channel: a
// retryable failure naming the broker's reason, and the sender opens
// another channel for the next message.
func TestMissingExchange(t *testing.T) {
	t.Parallel()
	p := newPlace(t, "#", nil)
	d := destination(brokerURL(), "hookgate-test-absent-"+suffix())
	send := open(t, d)
	out := send.Send(t.Context(), delivertest.Message("msg_absent"))
	if out.Delivered || !out.Retryable || out.Err == nil || !strings.Contains(out.Err.Error(), "NOT_FOUND") {
		t.Fatalf("Send to a missing exchange = %+v, want a retryable failure with NOT_FOUND", out)
	}
	if err := p.ch.ExchangeDeclare(d.Exchange, amqp.ExchangeTopic, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.ch.ExchangeDelete(d.Exchange, false, false) })
	if err := p.ch.ExchangeBind(p.exchange, "#", d.Exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	if out := send.Send(t.Context(), delivertest.Message("msg_present")); !out.Delivered {
		t.Errorf("Send once the exchange exists = %+v, want delivered", out)
	}
}

// proxied returns a sender to a new place through a proxy, with the
// proxy and the place.
func proxied(t *testing.T, timeout time.Duration) (deliver.Sender, *pgtest.Proxy, *place) {
	t.Helper()
	p := newPlace(t, "#", nil)
	u, err := url.Parse(brokerURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy, addr := pgtest.NewTCPProxy(t, u.Host)
	d := destination(withHost(t, addr), p.exchange)
	d.Timeout = config.Duration(timeout)
	return open(t, d), proxy, p
}

// The connection dropped under the sender (the broker restarted, the
// network cut): the next messages fail, retryably, while the broker cannot
// be reached; once it can, the sender connects again and delivers.
func TestConnectionLost(t *testing.T) {
	t.Parallel()
	send, proxy, p := proxied(t, 5*time.Second)
	if out := send.Send(t.Context(), delivertest.Message("msg_before")); !out.Delivered {
		t.Fatalf("Send = %+v, want delivered", out)
	}
	proxy.Cut()
	for i := range 3 {
		out := send.Send(t.Context(), delivertest.Message(fmt.Sprintf("msg_cut_%d", i)))
		if out.Delivered || !out.Retryable || out.Err == nil {
			t.Fatalf("Send %d with the broker cut off = %+v, want a retryable failure", i, out)
		}
	}
	proxy.Restore()
	var out deliver.Outcome
	waitFor(t, "a delivery after the broker is back", func() bool {
		out = send.Send(t.Context(), delivertest.Message("msg_after"))
		if !out.Delivered && !out.Retryable {
			t.Fatalf("Send after the broker is back = %+v, want delivered or retryable", out)
		}
		return out.Delivered
	})
	got, err := p.read(t.Context())
	if err != nil || len(got) != 2 || got[0].MessageId != "msg_before" || got[1].MessageId != "msg_after" {
		t.Errorf("read %d messages (%v), want msg_before and msg_after", len(got), err)
	}
}

// A broker that stops answering without closing the connection: a Send
// ends with its timeout, retryably, without waiting for the heartbeat to
// find the connection dead; so does a Send that has to connect.
func TestBrokerHangs(t *testing.T) {
	t.Parallel()
	send, proxy, _ := proxied(t, time.Second)
	if out := send.Send(t.Context(), delivertest.Message("msg_before")); !out.Delivered {
		t.Fatalf("Send = %+v, want delivered", out)
	}
	proxy.Hang()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	for i := range 2 {
		out := send.Send(ctx, delivertest.Message(fmt.Sprintf("msg_hung_%d", i)))
		if out.Delivered || !out.Retryable || !errors.Is(out.Err, context.DeadlineExceeded) {
			t.Fatalf("Send %d to a hung broker = %+v, want a retryable timeout", i, out)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("Sends to a hung broker took 15s: their 1s timeout did not end them")
	}
	proxy.Restore()
	waitFor(t, "a delivery after the hang", func() bool {
		return send.Send(t.Context(), delivertest.Message("msg_after")).Delivered
	})
}

// A Send that has to connect to a broker that accepts the connection and
// never answers ends with its timeout too.
func TestConnectHangs(t *testing.T) {
	t.Parallel()
	send, proxy, _ := proxied(t, time.Second)
	proxy.Hang()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	out := send.Send(ctx, delivertest.Message("msg_hung"))
	if out.Delivered || !out.Retryable || out.Err == nil || ctx.Err() != nil {
		t.Fatalf("Send connecting to a hung broker = %+v (%v), want a retryable failure within its 1s", out, ctx.Err())
	}
	proxy.Restore()
	waitFor(t, "a delivery after the hang", func() bool {
		return send.Send(t.Context(), delivertest.Message("msg_after")).Delivered
	})
}

// The password, given by reference, logs the sender in; a wrong one is a
// retryable failure whose error does not show it.
func TestPassword(t *testing.T) {
	t.Parallel()
	p := newPlace(t, "#", nil)
	u, err := url.Parse(brokerURL())
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	d := destination(u.String(), p.exchange)
	d.Password = config.NewSecret(password)
	if out := open(t, d).Send(t.Context(), delivertest.Message("msg_logged_in")); !out.Delivered {
		t.Fatalf("Send with the password by reference = %+v, want delivered", out)
	}
	const wrong = "not-the-password-3b1f"
	d.Password = config.NewSecret(wrong)
	out := open(t, d).Send(t.Context(), delivertest.Message("msg_refused"))
	if out.Delivered || !out.Retryable || out.Err == nil {
		t.Fatalf("Send with a wrong password = %+v, want a retryable failure", out)
	}
	if strings.Contains(out.Err.Error(), wrong) || strings.Contains(out.Body, wrong) {
		t.Errorf("the outcome shows the password: %+v", out)
	}
}

// A URL the sender cannot use is refused when it opens, without quoting
// the URL, which may hold a password.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"amqp://user:s3cret@127.0.0.1:5672/?heartbeat=x",
		"amqp://user:s3cret@127.0.0.1:5672/?auth_mechanism=CRAM-s3cret",
		"http://user:s3cret@127.0.0.1:5672/",
		"amqp://user:s3cret@[::1/",
	} {
		_, err := rabbitmq.New(config.Destination{Name: "rabbit", URL: raw, RoutingKey: "k"})
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "rabbit") {
			t.Errorf("New(%q) = %v, want an error naming the destination and not the password", raw, err)
		}
	}
}

// A closed sender delivers nothing, and fails at once.
func TestClosed(t *testing.T) {
	t.Parallel()
	p := newPlace(t, "#", nil)
	s, err := rabbitmq.New(destination(brokerURL(), p.exchange))
	if err != nil {
		t.Fatal(err)
	}
	if out := s.Send(t.Context(), delivertest.Message("msg_open")); !out.Delivered {
		t.Fatalf("Send = %+v, want delivered", out)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close again: %v", err)
	}
	if out := s.Send(t.Context(), delivertest.Message("msg_closed")); out.Delivered || out.Err == nil {
		t.Errorf("Send after Close = %+v, want a failure", out)
	}
}

// tlsFront terminates TLS in front of the test broker, with a
// self-signed certificate for 127.0.0.1, until t ends. It returns its
// address and the certificate's PEM file.
func tlsFront(t *testing.T) (addr, caFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile = t.TempDir() + "/ca.pem"
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(brokerURL())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", u.Host)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			wg.Go(func() { io.Copy(up, c); up.Close() })
			wg.Go(func() { io.Copy(c, up); c.Close() })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String(), caFile
}

// amqps:// connects over TLS, verifying the broker's certificate against
// the URL's cacertfile; a certificate it does not trust is a retryable
// failure.
func TestTLS(t *testing.T) {
	t.Parallel()
	p := newPlace(t, "#", nil)
	addr, caFile := tlsFront(t)
	u, err := url.Parse(withHost(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	u.Scheme, u.RawQuery = "amqps", url.Values{"cacertfile": {caFile}}.Encode()
	if out := open(t, destination(u.String(), p.exchange)).Send(t.Context(), delivertest.Message("msg_tls")); !out.Delivered {
		t.Fatalf("Send over TLS = %+v, want delivered", out)
	}
	// Another front's certificate, which this front does not have.
	_, otherCA := tlsFront(t)
	u.RawQuery = url.Values{"cacertfile": {otherCA}}.Encode()
	out := open(t, destination(u.String(), p.exchange)).Send(t.Context(), delivertest.Message("msg_untrusted"))
	if out.Delivered || !out.Retryable || out.Err == nil || !strings.Contains(out.Err.Error(), "certificate") {
		t.Errorf("Send to a broker whose certificate is not trusted = %+v, want a retryable certificate failure", out)
	}
	got, err := p.read(t.Context())
	if err != nil || len(got) != 1 || got[0].MessageId != "msg_tls" {
		t.Errorf("read %d messages (%v), want msg_tls alone", len(got), err)
	}
}
