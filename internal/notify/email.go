package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/mail"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// DefaultEmailTimeout bounds a Send of an Email that sets no Timeout.
const DefaultEmailTimeout = 30 * time.Second

// Ports when the URL names none: SMTP's, and that of SMTP over TLS.
const (
	smtpPort  = 25
	smtpsPort = 465
)

// Email sends messages as mail through an SMTP server. Build one with
// NewEmail, which says what is wrong with its fields.
//
// On smtp:// the mail goes over TLS when the server offers STARTTLS, and
// must when a password is set: a password is never sent in clear. smtps://
// speaks TLS from the first byte. With a user and a password the client
// authenticates with AUTH PLAIN or LOGIN, whichever the server offers;
// without them (a local relay, smtp://127.0.0.1:25) it does not.
type Email struct {
	// URL is smtp://[user@]host[:port] (port 25 by default) or
	// smtps://[user@]host[:port] (465). The user is percent-encoded:
	// smtp://alerts%40example.com@mail.example.com:587.
	URL string
	// Password is the user's; it is a secret, in no error. A password
	// needs a user, and a user a password.
	Password string
	// From is the sender: an address, with or without a name
	// ("hookgate <hookgate@example.com>").
	From string
	// To are the recipients, one address each.
	To []string
	// TLSConfig verifies the server's certificate; nil means the system's
	// roots. Its ServerName defaults to the URL's host.
	TLSConfig *tls.Config
	// Timeout bounds one Send, from connecting until the server has taken
	// the mail; zero means DefaultEmailTimeout.
	Timeout time.Duration
}

// FieldError is what is wrong with one field of an Email.
type FieldError struct {
	// Field is url, password, from, to[i] or timeout.
	Field string
	// Value is the field's value as it may be shown: never a password.
	Value  string
	Reason string
}

func (e *FieldError) Error() string {
	if e.Value == "" {
		return "email " + e.Field + ": " + e.Reason
	}
	return fmt.Sprintf("email %s %q: %s", e.Field, e.Value, e.Reason)
}

// NewEmail checks e's fields and returns it, or a *FieldError naming the
// first that is wrong.
func NewEmail(e Email) (*Email, error) {
	if _, err := e.server(); err != nil {
		return nil, err
	}
	return &e, nil
}

// smtpServer is where an Email's URL points, and how to talk to it.
type smtpServer struct {
	host     string
	port     int
	implicit bool // smtps://: TLS from the first byte
	user     string
}

func (s smtpServer) addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

// server checks every field and returns the server the URL names.
func (e Email) server() (smtpServer, error) {
	var s smtpServer
	if e.URL == "" {
		return s, &FieldError{Field: "url", Reason: "empty: want smtp://[user@]host[:port] or smtps://[user@]host[:port]"}
	}
	u, err := url.Parse(e.URL)
	if err != nil {
		// url.Parse's error quotes the whole URL, which may hold a
		// password where it should not be.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return s, &FieldError{Field: "url", Reason: err.Error()}
	}
	shown := u.Redacted()
	switch u.Scheme {
	case "smtp":
		s.port = smtpPort
	case "smtps":
		s.port, s.implicit = smtpsPort, true
	default:
		return s, &FieldError{Field: "url", Value: shown, Reason: "the scheme is not smtp or smtps"}
	}
	if s.host = u.Hostname(); s.host == "" {
		return s, &FieldError{Field: "url", Value: shown, Reason: "names no host"}
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return s, &FieldError{Field: "url", Value: shown, Reason: "the port is not between 1 and 65535"}
		}
		s.port = n
	}
	if u.Path != "" && u.Path != "/" || u.Opaque != "" {
		return s, &FieldError{Field: "url", Value: shown, Reason: "has a path; want smtp://[user@]host[:port]"}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return s, &FieldError{Field: "url", Value: shown, Reason: "has a query or fragment; want smtp://[user@]host[:port]"}
	}
	if u.User != nil {
		if _, set := u.User.Password(); set {
			return s, &FieldError{Field: "url", Value: shown, Reason: "holds a password: set it as the password, where it is kept secret"}
		}
		s.user = u.User.Username()
	}
	switch {
	case s.user != "" && e.Password == "":
		return s, &FieldError{Field: "password", Reason: fmt.Sprintf("empty, but the url names user %q", s.user)}
	case s.user == "" && e.Password != "":
		return s, &FieldError{Field: "password", Reason: "set, but the url names no user (smtp://user@host)"}
	}
	if e.From == "" {
		return s, &FieldError{Field: "from", Reason: "empty: want the sender's address"}
	}
	if _, err := mail.ParseAddress(e.From); err != nil {
		return s, &FieldError{Field: "from", Value: e.From, Reason: "not an address: " + err.Error()}
	}
	if len(e.To) == 0 {
		return s, &FieldError{Field: "to", Reason: "empty: want at least one recipient"}
	}
	for i, to := range e.To {
		if _, err := mail.ParseAddress(to); err != nil {
			return s, &FieldError{Field: "to[" + strconv.Itoa(i) + "]", Value: to, Reason: "not an address: " + err.Error()}
		}
	}
	if e.Timeout < 0 {
		return s, &FieldError{Field: "timeout", Value: e.Timeout.String(), Reason: "negative"}
	}
	return s, nil
}

// Send mails m to every recipient in one transaction: Text's subject, and
// its body with the source, destination, counts, times and the console's
// link below it, as plain text and as simple HTML.
//
// Send returns by the Email's Timeout or ctx's deadline, whichever comes
// first, and as soon as ctx is cancelled.
func (e *Email) Send(ctx context.Context, m Message) error {
	s, err := e.server()
	if err != nil {
		return err
	}
	msg, err := e.message(m)
	if err != nil {
		return fmt.Errorf("email: %w", err)
	}
	timeout := e.Timeout
	if timeout == 0 {
		timeout = DefaultEmailTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout,
		fmt.Errorf("no answer within %s: %w", timeout, context.DeadlineExceeded))
	defer cancel()
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if e.TLSConfig != nil {
		tlsConfig = e.TLSConfig.Clone()
	}
	if tlsConfig.ServerName == "" {
		tlsConfig.ServerName = s.host
	}

	// go-mail watches ctx only while dialing, and renews its deadline at
	// each step of the session: the connection closes when ctx is done, so
	// that the whole session ends by the timeout or as soon as ctx is
	// cancelled.
	stop := func() bool { return false }
	defer func() { stop() }()
	dial := func(dctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := new(net.Dialer).DialContext(dctx, network, addr)
		if err != nil {
			return nil, err
		}
		stop = context.AfterFunc(ctx, func() { _ = conn.Close() })
		if !s.implicit {
			return conn, nil
		}
		tc := tls.Client(conn, tlsConfig)
		if err := tc.HandshakeContext(dctx); err != nil {
			_ = conn.Close()
			return nil, err
		}
		return tc, nil
	}

	opts := []gomail.Option{
		gomail.WithPort(s.port),
		gomail.WithTimeout(timeout),
		gomail.WithDialContextFunc(dial),
		gomail.WithTLSConfig(tlsConfig),
	}
	switch {
	case s.implicit:
		// The connection is TLS already; no STARTTLS on top of it.
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	case e.Password != "":
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if s.user != "" {
		opts = append(opts,
			gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthPlain, gomail.SMTPAuthLogin),
			gomail.WithUsername(s.user), gomail.WithPassword(e.Password))
	}
	client, err := gomail.NewClient(s.host, opts...)
	if err != nil {
		return fmt.Errorf("email via %s: %w", s.addr(), err)
	}
	err = client.DialAndSendWithContext(ctx, msg)
	if err == nil {
		return nil
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		// go-mail's own deadline may end the session a moment before
		// ctx's: ctx is done at once.
		<-ctx.Done()
	}
	if ctx.Err() != nil {
		return fmt.Errorf("email via %s: %w: %w", s.addr(), context.Cause(ctx), err)
	}
	var reply *textproto.Error
	if errors.As(err, &reply) && reply.Code == 535 {
		return fmt.Errorf("email via %s: the server refused the password of user %q (authentication failed): %w", s.addr(), s.user, err)
	}
	return fmt.Errorf("email via %s: %w", s.addr(), err)
}

// message is m as a mail from e.From to e.To.
func (e *Email) message(m Message) (*gomail.Msg, error) {
	subject, body := Text(m)
	fs := fields(m)
	var plain strings.Builder
	plain.WriteString(body + "\n\n")
	for _, f := range fs {
		plain.WriteString(f.Label + ": " + f.Value + "\n")
	}
	plain.WriteString(when(m) + "\nIncident: " + m.Incident + "\n")
	if m.ConsoleURL != "" {
		plain.WriteString("Console: " + m.ConsoleURL + "\n")
	}
	var html strings.Builder
	err := mailHTML.Execute(&html, struct {
		Body, When, Incident, Console string
		Fields                        []field
	}{body, when(m), m.Incident, m.ConsoleURL, fs})
	if err != nil {
		return nil, err
	}

	msg := gomail.NewMsg()
	msg.SetUserAgent("hookgate")
	if err := msg.From(e.From); err != nil {
		return nil, err
	}
	if err := msg.To(e.To...); err != nil {
		return nil, err
	}
	msg.Subject(subject)
	msg.SetBodyString(gomail.TypeTextPlain, plain.String())
	msg.AddAlternativeString(gomail.TypeTextHTML, html.String())
	return msg, nil
}

// mailHTML is the mail's HTML part: the same as its text.
var mailHTML = template.Must(template.New("mail").Parse(`<!DOCTYPE html>
<html><body>
<p>{{.Body}}</p>
{{if .Fields}}<table>
{{range .Fields}}<tr><th align="left">{{.Label}}</th><td>{{.Value}}</td></tr>
{{end}}</table>
{{end}}<p>{{.When}}<br>Incident: {{.Incident}}</p>
{{if .Console}}<p><a href="{{.Console}}">Open in the console</a></p>
{{end}}</body></html>
`))
