package natsjs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/verify"
)

func init() {
	deliver.Register(config.KindNATS, func(d config.Destination) (deliver.Sender, error) { return New(d) })
}

var (
	_ deliver.Sender = (*Sender)(nil)
	_ io.Closer      = (*Sender)(nil)
)

// Sender publishes to one destination's JetStream streams through one
// connection. It is safe for concurrent use.
type Sender struct {
	name     string
	template string
	timeout  time.Duration
	// server is the URL shown in errors: scheme://host:port, without the
	// user.
	server string
	nc     *nats.Conn
	js     jetstream.JetStream
	// down is why the last attempt to connect failed, or why the
	// connection was lost: the reason an attempt made while it is down
	// gives.
	down atomic.Pointer[error]
}

// New returns the sender of d, a NATS destination, connecting to its
// server in the background: New does not fail when the server is down.
// The user is the URL's, the password d.Password; a password without a
// user is sent as a token. The URL's query may name TLS files (see
// tlsFiles).
func New(d config.Destination) (*Sender, error) {
	u, err := url.Parse(d.URL)
	if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Host == "" {
		return nil, fmt.Errorf("destination %s: url: want nats://host:port or tls://host:port", d.Name)
	}
	if _, has := u.User.Password(); has {
		return nil, fmt.Errorf("destination %s: url: the URL holds a password: put it in password, as a reference (env:NAME)", d.Name)
	}
	if !validSubject(config.Fill(d.Subject, "s", "t", "y")) {
		return nil, fmt.Errorf("destination %s: subject %q: want tokens separated by '.', none empty, without spaces or wildcards", d.Name, d.Subject)
	}
	s := &Sender{name: d.Name, template: d.Subject, timeout: time.Duration(d.Timeout), server: u.Scheme + "://" + u.Host}
	if s.timeout <= 0 {
		s.timeout = deliver.DefaultTimeout
	}
	// Messages are never buffered while the connection is down
	// (ReconnectBufSize -1): an attempt that cannot be sent fails now,
	// rather than reaching the stream later, after it was reported failed.
	opts := []nats.Option{nats.Name("hookgate"), nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectBufSize(-1),
		nats.ReconnectErrHandler(s.lost), nats.DisconnectErrHandler(s.lost),
		// nats.go writes the errors it finds outside a call to stderr;
		// they are why the connection went down, for the next attempt to
		// say.
		nats.ErrorHandler(func(nc *nats.Conn, _ *nats.Subscription, err error) { s.lost(nc, err) })}
	files, err := tlsFiles(u.Query())
	if err != nil {
		return nil, fmt.Errorf("destination %s: url: %w", d.Name, err)
	}
	opts = append(opts, files...)
	user, password := u.User.Username(), d.Password.Value()
	switch {
	case user != "":
		opts = append(opts, nats.UserInfo(user, password))
	case password != "":
		opts = append(opts, nats.Token(password))
	}
	// nats.go prefers a URL's user to these options, and takes a user
	// without a password for a token: the URL is passed without it.
	s.nc, err = nats.Connect(s.server, opts...)
	if err != nil {
		return nil, fmt.Errorf("destination %s: connect to %s: %w", d.Name, s.server, err)
	}
	if s.js, err = jetstream.New(s.nc); err != nil {
		s.nc.Close()
		return nil, fmt.Errorf("destination %s: %w", d.Name, err)
	}
	return s, nil
}

// tlsFiles reads the TLS files the URL's query names, by the names
// RabbitMQ's amqps:// URLs give them: cacertfile, the CA (PEM) the
// server's certificate is verified against instead of the system's
// roots; certfile and keyfile, the client's certificate and key (PEM)
// for a server that asks for one. Any of them means TLS. Another
// parameter is refused rather than ignored.
func tlsFiles(q url.Values) ([]nats.Option, error) {
	for k := range q {
		if k != "cacertfile" && k != "certfile" && k != "keyfile" {
			return nil, fmt.Errorf("unknown parameter %q: want cacertfile, certfile and keyfile", k)
		}
	}
	var opts []nats.Option
	if ca := q.Get("cacertfile"); ca != "" {
		opts = append(opts, nats.RootCAs(ca))
	}
	cert, key := q.Get("certfile"), q.Get("keyfile")
	if (cert == "") != (key == "") {
		return nil, errors.New("certfile and keyfile: want both or neither")
	}
	if cert != "" {
		opts = append(opts, nats.ClientCert(cert, key))
	}
	return opts, nil
}

// lost keeps err, why the connection is down, when there is one.
func (s *Sender) lost(_ *nats.Conn, err error) {
	if err != nil {
		s.down.Store(&err)
	}
}

// Close closes the connection; a Send after it fails.
func (s *Sender) Close() error {
	s.nc.Close()
	return nil
}

// Send publishes m and waits for the stream's PubAck, at most the
// destination's timeout.
func (s *Sender) Send(ctx context.Context, m deliver.Message) deliver.Outcome {
	start := time.Now()
	out := s.send(ctx, m)
	out.Duration = time.Since(start)
	return out
}

func (s *Sender) send(parent context.Context, m deliver.Message) deliver.Outcome {
	if err := parent.Err(); err != nil {
		return deliver.Outcome{Retryable: true, Err: fmt.Errorf("deliver to %s: %w", s.name, err)}
	}
	if !s.nc.IsConnected() {
		msg := fmt.Sprintf("deliver to %s: not connected to %s (%s)", s.name, s.server, strings.ToLower(s.nc.Status().String()))
		if err := s.nc.LastError(); err != nil {
			msg += ": " + err.Error()
		} else if err := s.down.Load(); err != nil {
			msg += ": " + (*err).Error()
		}
		return deliver.Outcome{Retryable: true, Err: errors.New(msg)}
	}
	ctx, cancel := context.WithTimeout(parent, s.timeout)
	defer cancel()
	subject := config.Fill(s.template, subjectValue(m.Source), subjectValue(m.Tenant), subjectValue(m.Type))
	msg := &nats.Msg{Subject: subject, Data: m.Payload, Header: nats.Header{}}
	// The order matters: hookgate's own headers replace the message's.
	for k, v := range m.Headers {
		msg.Header.Set(k, v)
	}
	ct := m.ContentType
	if ct == "" {
		ct = "application/json"
	}
	msg.Header.Set("Content-Type", ct)
	msg.Header.Set("X-Hookgate-Source", m.Source)
	msg.Header.Set("X-Hookgate-Tenant", m.Tenant)
	msg.Header.Set("X-Hookgate-Type", m.Type)
	msg.Header.Set(verify.HeaderWebhookID, m.WebhookID)
	ack, err := s.js.PublishMsg(ctx, msg, jetstream.WithMsgID(m.WebhookID))
	switch {
	case err == nil && ack.Duplicate:
		return deliver.Outcome{Delivered: true, Body: fmt.Sprintf("stream %s: duplicate of seq %d", ack.Stream, ack.Sequence)}
	case err == nil:
		return deliver.Outcome{Delivered: true, Body: fmt.Sprintf("stream %s seq %d", ack.Stream, ack.Sequence)}
	case errors.Is(err, jetstream.ErrNoStreamResponse):
		// The operator creates streams; the event waits until one takes
		// the subject.
		return deliver.Outcome{Retryable: true, Err: fmt.Errorf("deliver to %s: no JetStream stream takes subject %q", s.name, subject)}
	case parent.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)):
		return deliver.Outcome{Retryable: true, Err: fmt.Errorf("deliver to %s: no PubAck within %v for subject %q", s.name, s.timeout, subject)}
	case errors.Is(err, nats.ErrMaxPayload), errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum),
		errors.Is(err, nats.ErrBadSubject), errors.Is(err, nats.ErrBadHeaderMsg):
		// Every attempt would fail the same way.
		return deliver.Outcome{Err: fmt.Errorf("deliver to %s: publish to %q: %w", s.name, subject, err)}
	}
	return deliver.Outcome{Retryable: true, Err: fmt.Errorf("deliver to %s: publish to %q: %w", s.name, subject, err)}
}

// subjectValue is v, an event's source, tenant or type, made fit for a
// subject: each whitespace or control character, '*' and '>' becomes
// '_', and so does each empty token (v empty, or with a leading, trailing
// or doubled '.'). Dots and every other character, '/' included, stay.
func subjectValue(v string) string {
	tokens := strings.Split(v, ".")
	for i, tok := range tokens {
		tok = strings.Map(func(r rune) rune {
			if unfit(r) {
				return '_'
			}
			return r
		}, tok)
		if tok == "" {
			tok = "_"
		}
		tokens[i] = tok
	}
	return strings.Join(tokens, ".")
}

// validSubject reports whether s is a subject to publish to: tokens
// separated by '.', none empty, none holding a character that unfit
// refuses.
func validSubject(s string) bool {
	for tok := range strings.SplitSeq(s, ".") {
		if tok == "" || strings.IndexFunc(tok, unfit) >= 0 {
			return false
		}
	}
	return true
}

// unfit reports whether r has no place in a subject: whitespace ends it
// on the wire, a control character garbles it, '*' and '>' are
// subscribers' wildcards.
func unfit(r rune) bool {
	return r == '*' || r == '>' || unicode.IsSpace(r) || unicode.IsControl(r)
}
