package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
)

func init() {
	deliver.Register(config.KindRabbitMQ, func(d config.Destination) (deliver.Sender, error) { return New(d) })
}

var _ deliver.Sender = (*Sender)(nil)

// DefaultRoutingKey is the routing key of a destination that sets none.
const DefaultRoutingKey = "{source}.{type}"

// closeTimeout bounds how long Close waits for the broker to answer.
const closeTimeout = 5 * time.Second

// errClosed is what a Send on a closed Sender fails with.
var errClosed = errors.New("sender closed")

// Sender publishes a destination's events to its exchange. It is safe for
// concurrent use.
type Sender struct {
	name string
	// url holds the password, if any: it is never shown, and no error
	// quotes it (it parsed when the Sender was made).
	url     string
	where   string // how the URL is shown: scheme://host:port
	timeout time.Duration
	// exchange and routingKey are templates, filled per event.
	exchange, routingKey string

	// ctx ends dials in progress when the Sender is closed.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	conn    *amqp.Connection
	dialing *dialing
	// idle are the channels of conn that no Send is using.
	idle   []*channel
	closed bool
}

// dialing is a connection being made; done is closed when it is, with err
// set if it failed.
type dialing struct {
	done chan struct{}
	err  error
}

// channel is a channel in confirm mode with one message in flight at most,
// so that its confirm and its return (which the broker sends before the
// confirm) are that message's.
type channel struct {
	conn    *amqp.Connection
	ch      *amqp.Channel
	returns chan amqp.Return
	closes  chan *amqp.Error
}

// New returns the sender of d, an amqp:// or amqps:// destination. It
// does not connect: the first Send does, so that a gateway starts while
// the broker is down.
func New(d config.Destination) (*Sender, error) {
	fail := func(format string, args ...any) (*Sender, error) {
		return nil, fmt.Errorf("destination %s: url: "+format, append([]any{d.Name}, args...)...)
	}
	u, err := url.Parse(d.URL)
	if err != nil {
		// url.Parse's error quotes the URL, password and all.
		return fail("does not parse (the URL is not shown: it may hold a password)")
	}
	if u.Scheme != "amqp" && u.Scheme != "amqps" {
		return fail("want amqp:// or amqps://, not %s://", u.Scheme)
	}
	where := deliver.Redact(u.String())
	if !d.Password.IsZero() {
		user := "guest"
		if u.User != nil {
			user = u.User.Username()
		}
		u.User = url.UserPassword(user, d.Password.Value())
	}
	uri, err := amqp.ParseURI(u.String())
	if err != nil {
		return fail("%v", err)
	}
	for _, m := range uri.AuthMechanism {
		// Checked here, as the client would check it when dialling: a bad
		// one would fail every attempt.
		if !slices.Contains([]string{"PLAIN", "AMQPLAIN", "EXTERNAL"}, strings.ToUpper(m)) {
			return fail("auth_mechanism: want PLAIN, AMQPLAIN or EXTERNAL")
		}
	}
	s := &Sender{name: d.Name, url: u.String(), where: where, timeout: time.Duration(d.Timeout),
		exchange: d.Exchange, routingKey: d.RoutingKey}
	if s.timeout <= 0 {
		s.timeout = deliver.DefaultTimeout
	}
	if s.routingKey == "" {
		s.routingKey = DefaultRoutingKey
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Send publishes m and waits for the broker's confirm, at most the
// destination's timeout.
func (s *Sender) Send(ctx context.Context, m deliver.Message) deliver.Outcome {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out := s.send(ctx, m)
	out.Duration = time.Since(start)
	if out.Err != nil {
		out.Err = fmt.Errorf("deliver to %s: %w", s.name, out.Err)
	}
	return out
}

// retry is a failure worth another attempt.
func retry(err error) deliver.Outcome { return deliver.Outcome{Retryable: true, Err: err} }

func (s *Sender) send(ctx context.Context, m deliver.Message) deliver.Outcome {
	c, err := s.take(ctx)
	if err != nil {
		return retry(err)
	}
	// The publish runs apart, so that a write the broker does not read
	// (a connection that hangs) cannot hold the Send past its time.
	done := make(chan deliver.Outcome, 1)
	go func() { done <- s.publish(ctx, c, m) }()
	select {
	case out := <-done:
		return out
	case <-ctx.Done():
		return retry(fmt.Errorf("publish to %s: %w", s.where, ctx.Err()))
	}
}

// publish publishes m on c, which it then gives back to the pool, or
// closes when its state is in doubt.
func (s *Sender) publish(ctx context.Context, c *channel, m deliver.Message) deliver.Outcome {
	exchange := config.Fill(s.exchange, m.Source, m.Tenant, m.Type)
	key := config.Fill(s.routingKey, m.Source, m.Tenant, m.Type)
	headers := amqp.Table{}
	for k, v := range m.Headers {
		headers[k] = v
	}
	headers["webhook-id"], headers["type"], headers["source"], headers["tenant"] = m.WebhookID, m.Type, m.Source, m.Tenant
	ct := m.ContentType
	if ct == "" {
		ct = "application/json"
	}
	dc, err := c.ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, amqp.Publishing{
		Headers: headers, ContentType: ct, DeliveryMode: amqp.Persistent, MessageId: m.WebhookID,
		Timestamp: time.Now(), Type: m.Type, AppId: "hookgate", Body: m.Payload,
	})
	if err != nil {
		s.discard(c)
		return retry(fmt.Errorf("publish to %s: %w", s.where, err))
	}
	acked, err := dc.WaitContext(ctx)
	if err != nil {
		// The confirm may still come, and a return with it: the channel
		// cannot carry another message.
		s.discard(c)
		return retry(fmt.Errorf("no confirm from %s: %w", s.where, err))
	}
	if !acked {
		if c.ch.IsClosed() {
			// A closed channel's pending confirms end unacknowledged.
			reason := "closed"
			select {
			case e := <-c.closes:
				if e != nil {
					reason = e.Error()
				}
			default:
			}
			return deliver.Outcome{Retryable: true, Body: reason,
				Err: fmt.Errorf("no confirm from %s: the channel closed: %s", s.where, reason)}
		}
		s.release(c)
		return deliver.Outcome{Retryable: true, Body: "nack",
			Err: fmt.Errorf("%s refused the message (nack): a queue may be full or unavailable", s.where)}
	}
	// The broker sends a message's return before its confirm, and both
	// come through one reader, so a return is here by now.
	select {
	case r, ok := <-c.returns:
		if ok {
			s.release(c)
			return deliver.Outcome{Retryable: true, Body: fmt.Sprintf("%d %s", r.ReplyCode, r.ReplyText),
				Err: fmt.Errorf("unroutable: %s returned the message: exchange %q routes routing key %q to no queue (%d %s)",
					s.where, exchange, key, r.ReplyCode, r.ReplyText)}
		}
	default:
	}
	s.release(c)
	return deliver.Outcome{Delivered: true, Body: "confirmed"}
}

// take returns a channel of the connection for one message: an idle
// one, or a new one, connecting first if there is no connection.
func (s *Sender) take(ctx context.Context) (*channel, error) {
	s.mu.Lock()
	for len(s.idle) > 0 {
		c := s.idle[len(s.idle)-1]
		s.idle = s.idle[:len(s.idle)-1]
		if !c.ch.IsClosed() {
			s.mu.Unlock()
			return c, nil
		}
	}
	s.mu.Unlock()
	conn, err := s.connection(ctx)
	if err != nil {
		return nil, err
	}
	type opened struct {
		c   *channel
		err error
	}
	// Opening a channel waits for the broker's answer, however long.
	done := make(chan opened, 1)
	go func() {
		c, err := s.open(conn)
		done <- opened{c, err}
	}()
	select {
	case o := <-done:
		return o.c, o.err
	case <-ctx.Done():
		go func() {
			if o := <-done; o.err == nil {
				s.release(o.c)
			}
		}()
		return nil, fmt.Errorf("open a channel to %s: %w", s.where, ctx.Err())
	}
}

// open opens a channel of conn in confirm mode.
func (s *Sender) open(conn *amqp.Connection) (*channel, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("open a channel to %s: %w", s.where, err)
	}
	c := &channel{conn: conn, ch: ch,
		returns: ch.NotifyReturn(make(chan amqp.Return, 1)),
		closes:  ch.NotifyClose(make(chan *amqp.Error, 1))}
	if err := ch.Confirm(false); err != nil {
		ch.Close()
		return nil, fmt.Errorf("confirm mode on %s: %w", s.where, err)
	}
	return c, nil
}

// release gives c back to the pool, unless it or its connection is gone.
func (s *Sender) release(c *channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed && c.conn == s.conn && !c.ch.IsClosed() {
		s.idle = append(s.idle, c)
	}
}

// discard closes c, which is not used again. The broker's answer is not
// waited for: the connection may be the one that stopped answering.
func (s *Sender) discard(c *channel) {
	go c.ch.Close()
}

// connection returns the open connection, making one if there is none:
// one dial at a time, whose outcome every Send waiting for it shares.
func (s *Sender) connection(ctx context.Context) (*amqp.Connection, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errClosed
		}
		if s.conn != nil && !s.conn.IsClosed() {
			conn := s.conn
			s.mu.Unlock()
			return conn, nil
		}
		d := s.dialing
		if d == nil {
			d = &dialing{done: make(chan struct{})}
			s.dialing, s.idle = d, nil
			go s.dial(d)
		}
		s.mu.Unlock()
		select {
		case <-d.done:
			if d.err != nil {
				return nil, d.err
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to %s: %w", s.where, ctx.Err())
		}
	}
}

// dial connects to the broker, within the destination's timeout, and
// makes the connection the Sender's.
func (s *Sender) dial(d *dialing) {
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName("hookgate " + s.name)
	conn, err := amqp.DialConfig(s.url, amqp.Config{
		Properties: props,
		// The deadline bounds the TLS and AMQP handshakes too; the client
		// clears it once they are done.
		Dial: func(network, addr string) (net.Conn, error) {
			var dialer net.Dialer
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if err := c.SetDeadline(deadline); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		},
	})
	s.mu.Lock()
	s.dialing = nil
	switch {
	case err != nil:
		d.err = fmt.Errorf("connect to %s: %w", s.where, err)
	case s.closed:
		d.err = errClosed
	default:
		s.conn = conn
	}
	s.mu.Unlock()
	if err == nil && d.err != nil {
		conn.CloseDeadline(time.Now().Add(closeTimeout))
	}
	close(d.done)
}

// Close closes the connection; Sends in flight and later fail.
func (s *Sender) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel()
	conn := s.conn
	s.conn, s.idle = nil, nil
	s.mu.Unlock()
	if conn == nil {
		return nil
	}
	if err := conn.CloseDeadline(time.Now().Add(closeTimeout)); err != nil && !errors.Is(err, amqp.ErrClosed) {
		return fmt.Errorf("close %s: %w", s.where, err)
	}
	return nil
}
