package notify_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/hookgate/hookgate/internal/notify"
)

const (
	mailUser     = "alerts@example.com"
	mailPassword = "Pa55-correct-horse"
)

// mailOpts is what a test SMTP server offers.
type mailOpts struct {
	// starttls: the certificate offered with STARTTLS; implicit: the
	// one the server speaks TLS with from the first byte.
	starttls, implicit *tls.Certificate
	// mechs are the AUTH mechanisms offered (PLAIN, LOGIN); none means no
	// AUTH. A server offering them asks for them before MAIL.
	mechs []string
	// insecureAuth offers AUTH without TLS.
	insecureAuth bool
}

// received is one mail as the server got it.
type received struct {
	from string
	to   []string
	data []byte
	tls  bool
	user string
}

// mailServer is a real SMTP server (emersion/go-smtp) on a loopback port.
type mailServer struct {
	addr string
	opts mailOpts

	mu        sync.Mutex
	mails     []received
	authTries int
}

func startMailServer(t *testing.T, o mailOpts) *mailServer {
	t.Helper()
	ms := &mailServer{opts: o}
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &mailSession{srv: ms, conn: c}, nil
	}))
	s.Domain = "localhost"
	s.AllowInsecureAuth = o.insecureAuth
	s.ReadTimeout, s.WriteTimeout = 10*time.Second, 10*time.Second
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ms.addr = l.Addr().String()
	if o.starttls != nil {
		s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*o.starttls}}
	}
	if o.implicit != nil {
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{*o.implicit}})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(l)
	}()
	t.Cleanup(func() {
		_ = s.Close()
		<-done
	})
	return ms
}

func (ms *mailServer) received() []received {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return slices.Clone(ms.mails)
}

func (ms *mailServer) tries() int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.authTries
}

type mailSession struct {
	srv  *mailServer
	conn *smtp.Conn
	user string
	mail received
}

func (s *mailSession) AuthMechanisms() []string { return s.srv.opts.mechs }

func (s *mailSession) Auth(mech string) (sasl.Server, error) {
	s.srv.mu.Lock()
	s.srv.authTries++
	s.srv.mu.Unlock()
	check := func(user, password string) error {
		if user != mailUser || password != mailPassword {
			return smtp.ErrAuthFailed
		}
		s.user = user
		return nil
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(_, user, password string) error { return check(user, password) }), nil
	case sasl.Login:
		return &loginServer{check: check}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

func (s *mailSession) Mail(from string, _ *smtp.MailOptions) error {
	if len(s.srv.opts.mechs) > 0 && s.user == "" {
		return smtp.ErrAuthRequired
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.mail = received{from: from, tls: isTLS, user: s.user}
	return nil
}

func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.mail.to = append(s.mail.to, to)
	return nil
}

func (s *mailSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.mail.data = data
	s.srv.mu.Lock()
	s.srv.mails = append(s.srv.mails, s.mail)
	s.srv.mu.Unlock()
	return nil
}

func (s *mailSession) Reset()        { s.mail = received{} }
func (s *mailSession) Logout() error { return nil }

// loginServer is the server's side of AUTH LOGIN: a user name, then a
// password, each asked for.
type loginServer struct {
	step  int
	user  string
	check func(user, password string) error
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	l.step++
	switch l.step {
	case 1:
		if response != nil {
			l.user, l.step = string(response), 2
			return []byte("Password:"), false, nil
		}
		return []byte("Username:"), false, nil
	case 2:
		l.user = string(response)
		return []byte("Password:"), false, nil
	}
	return nil, true, l.check(l.user, string(response))
}

// selfSigned is a certificate for 127.0.0.1 and localhost, and a pool
// that trusts it.
func selfSigned(t *testing.T) (*tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "hookgate test SMTP"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func newEmail(t *testing.T, e notify.Email) *notify.Email {
	t.Helper()
	if e.From == "" {
		e.From = "hookgate <hookgate@example.com>"
	}
	if e.To == nil {
		e.To = []string{"ops@example.com"}
	}
	if e.Timeout == 0 {
		e.Timeout = 10 * time.Second
	}
	em, err := notify.NewEmail(e)
	if err != nil {
		t.Fatal(err)
	}
	return em
}

// readMail parses what the server got: the headers, and the text of
// each part by its content type.
func readMail(t *testing.T, data []byte) (mail.Header, map[string]string) {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]string{}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(mt, "multipart/") {
		b, err := io.ReadAll(msg.Body)
		if err != nil {
			t.Fatal(err)
		}
		parts[mt] = string(b)
		return msg.Header, parts
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pt, _, err := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(p)
		if err != nil {
			t.Fatal(err)
		}
		parts[pt] = string(b)
	}
	return msg.Header, parts
}

// A local relay: no TLS offered, no AUTH; the mail arrives with its
// sender, recipients, subject and the words.
func TestEmailRelay(t *testing.T) {
	srv := startMailServer(t, mailOpts{})
	em := newEmail(t, notify.Email{URL: "smtp://" + srv.addr, To: []string{"ops@example.com", "Oncall <oncall@example.com>"}})
	m := sample("destination.failing", notify.Opened)
	if err := em.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	got := srv.received()
	if len(got) != 1 {
		t.Fatalf("%d mails arrived", len(got))
	}
	r := got[0]
	if r.from != "hookgate@example.com" || strings.Join(r.to, ",") != "ops@example.com,oncall@example.com" || r.tls {
		t.Errorf("from %q to %q tls %v", r.from, r.to, r.tls)
	}
	h, parts := readMail(t, r.data)
	subject, body := notify.Text(m)
	dec := new(mime.WordDecoder)
	if s, err := dec.DecodeHeader(h.Get("Subject")); err != nil || s != subject {
		t.Errorf("subject %q (%v), want %q", s, err, subject)
	}
	if from, err := h.AddressList("From"); err != nil || len(from) != 1 || from[0].Address != "hookgate@example.com" {
		t.Errorf("From %v (%v)", from, err)
	}
	if to, err := h.AddressList("To"); err != nil || len(to) != 2 || to[1].Name != "Oncall" {
		t.Errorf("To %v (%v)", to, err)
	}
	text := parts["text/plain"]
	for _, want := range []string{body, "Destination: crm", "Pending: 1,204", "Opened 2025-03-14 10:04:05 UTC", m.ConsoleURL} {
		if !strings.Contains(text, want) {
			t.Errorf("the text part has no %q:\n%s", want, text)
		}
	}
	if html := parts["text/html"]; !strings.Contains(html, "Delivery to crm has failed 12 times") || !strings.Contains(html, `href="`+m.ConsoleURL+`"`) {
		t.Errorf("the HTML part:\n%s", html)
	}
}

// A relay that offers STARTTLS gets the mail over TLS, though no password
// is sent.
func TestEmailOpportunisticTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	srv := startMailServer(t, mailOpts{starttls: cert})
	em := newEmail(t, notify.Email{URL: "smtp://" + srv.addr, TLSConfig: &tls.Config{RootCAs: pool}})
	if err := em.Send(context.Background(), sample("events.dead", notify.Opened)); err != nil {
		t.Fatal(err)
	}
	if got := srv.received(); len(got) != 1 || !got[0].tls {
		t.Errorf("received %+v, want one mail over TLS", got)
	}
}

// STARTTLS with a certificate trusted through TLSConfig, then AUTH PLAIN
// or LOGIN, whichever the server offers.
func TestEmailStartTLSAuth(t *testing.T) {
	for _, mech := range []string{sasl.Plain, sasl.Login} {
		t.Run(mech, func(t *testing.T) {
			cert, pool := selfSigned(t)
			srv := startMailServer(t, mailOpts{starttls: cert, mechs: []string{mech}})
			em := newEmail(t, notify.Email{URL: "smtp://" + strings.Replace(mailUser, "@", "%40", 1) + "@" + srv.addr,
				Password: mailPassword, TLSConfig: &tls.Config{RootCAs: pool}})
			if err := em.Send(context.Background(), sample("source.silent", notify.Resolved)); err != nil {
				t.Fatal(err)
			}
			got := srv.received()
			if len(got) != 1 || !got[0].tls || got[0].user != mailUser {
				t.Errorf("received %+v, want one mail over TLS from %s", got, mailUser)
			}
		})
	}
}

// smtps:// speaks TLS from the first byte.
func TestEmailImplicitTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	srv := startMailServer(t, mailOpts{implicit: cert, mechs: []string{sasl.Plain}})
	em := newEmail(t, notify.Email{URL: "smtps://alerts%40example.com@" + srv.addr,
		Password: mailPassword, TLSConfig: &tls.Config{RootCAs: pool}})
	if err := em.Send(context.Background(), sample("spool.waiting", notify.Reminder)); err != nil {
		t.Fatal(err)
	}
	got := srv.received()
	if len(got) != 1 || !got[0].tls || got[0].user != mailUser {
		t.Errorf("received %+v, want one mail over TLS from %s", got, mailUser)
	}
}

// A wrong password is an error that says the server refused it, and shows
// neither password.
func TestEmailWrongPassword(t *testing.T) {
	cert, pool := selfSigned(t)
	srv := startMailServer(t, mailOpts{starttls: cert, mechs: []string{sasl.Plain}})
	em := newEmail(t, notify.Email{URL: "smtp://alerts%40example.com@" + srv.addr,
		Password: "Wr0ng-battery-staple", TLSConfig: &tls.Config{RootCAs: pool}})
	err := em.Send(context.Background(), sample("events.dead", notify.Opened))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "535") || !strings.Contains(msg, "authenticat") {
		t.Errorf("error does not say the login was refused: %s", msg)
	}
	if strings.Contains(msg, "Wr0ng") || strings.Contains(msg, mailPassword) {
		t.Errorf("error shows a password: %s", msg)
	}
	if got := srv.received(); len(got) != 0 {
		t.Errorf("a mail arrived: %+v", got)
	}
}

// With a password, a server that offers no STARTTLS never gets it: not
// even on loopback, where the SMTP library would allow it.
func TestEmailPasswordNeedsTLS(t *testing.T) {
	srv := startMailServer(t, mailOpts{mechs: []string{sasl.Plain, sasl.Login}, insecureAuth: true})
	em := newEmail(t, notify.Email{URL: "smtp://alerts%40example.com@" + srv.addr, Password: mailPassword})
	err := em.Send(context.Background(), sample("events.dead", notify.Opened))
	if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Errorf("got %v, want an error naming STARTTLS", err)
	}
	if n := srv.tries(); n != 0 {
		t.Errorf("AUTH was tried %d times", n)
	}
}

// A certificate the client does not trust (nil TLSConfig: the system's
// roots) stops the mail before the password is sent.
func TestEmailUntrustedCertificate(t *testing.T) {
	cert, _ := selfSigned(t)
	srv := startMailServer(t, mailOpts{starttls: cert, mechs: []string{sasl.Plain}})
	em := newEmail(t, notify.Email{URL: "smtp://alerts%40example.com@" + srv.addr, Password: mailPassword})
	err := em.Send(context.Background(), sample("events.dead", notify.Opened))
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("got %v, want an unknown authority", err)
	}
	if n := srv.tries(); n != 0 {
		t.Errorf("AUTH was tried %d times", n)
	}
}

// silentServer accepts connections and says nothing; or, with greet,
// greets the client and then says nothing more. The channel gets a value
// for each client once it waits for the server: when it is accepted, or,
// with greet, when its first command (EHLO) has arrived.
func silentServer(t *testing.T, greet bool) (string, chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{}, 8)
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if !greet {
				waiting <- struct{}{}
				continue
			}
			wg.Go(func() {
				if _, err := io.WriteString(c, "220 localhost ESMTP\r\n"); err != nil {
					return
				}
				if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
					return
				}
				waiting <- struct{}{}
			})
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String(), waiting
}

// A server that accepts the connection and says nothing holds Send only
// until the Email's timeout.
func TestEmailServerHangs(t *testing.T) {
	addr, _ := silentServer(t, false)
	em := newEmail(t, notify.Email{URL: "smtp://" + addr, Timeout: 200 * time.Millisecond})
	err := em.Send(context.Background(), sample("events.dead", notify.Opened))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Errorf("got %v, want a deadline error", err)
	}
}

// The context's deadline bounds Send as well, when it comes first.
func TestEmailContextDeadline(t *testing.T) {
	addr, _ := silentServer(t, false)
	em := newEmail(t, notify.Email{URL: "smtp://" + addr, Timeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := em.Send(ctx, sample("events.dead", notify.Opened))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want a deadline error", err)
	}
}

// Cancelling the context (hookgate stopping) ends a Send that is waiting
// for the server in the middle of the session.
func TestEmailCancelled(t *testing.T) {
	addr, waiting := silentServer(t, true)
	em := newEmail(t, notify.Email{URL: "smtp://" + addr, Timeout: 30 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-waiting
		cancel()
	}()
	err := em.Send(ctx, sample("events.dead", notify.Opened))
	if !errors.Is(err, context.Canceled) || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("got %v, want context.Canceled, not a timeout", err)
	}
}

func TestNewEmailRefuses(t *testing.T) {
	good := notify.Email{URL: "smtp://alerts@mail.example.com:587", Password: "s3cr3t-pw", From: "hookgate@example.com", To: []string{"ops@example.com"}}
	cases := []struct {
		name  string
		edit  func(*notify.Email)
		field string
		want  string
	}{
		{"no url", func(e *notify.Email) { e.URL = "" }, "url", "smtp://"},
		{"another scheme", func(e *notify.Email) { e.URL = "https://mail.example.com" }, "url", "smtp or smtps"},
		{"no host", func(e *notify.Email) { e.URL = "smtp://alerts@:587" }, "url", "host"},
		{"a port that is no number", func(e *notify.Email) { e.URL = "smtp://mail.example.com:smtp" }, "url", "port"},
		{"a port out of range", func(e *notify.Email) { e.URL = "smtp://mail.example.com:70000" }, "url", "port"},
		{"a path", func(e *notify.Email) { e.URL = "smtp://alerts@mail.example.com/inbox" }, "url", "path"},
		{"a query", func(e *notify.Email) { e.URL = "smtp://alerts@mail.example.com?tls=off" }, "url", "query"},
		{"a password in the url", func(e *notify.Email) { e.URL = "smtp://alerts:s3cr3t-pw@mail.example.com" }, "url", "password"},
		{"a user without a password", func(e *notify.Email) { e.Password = "" }, "password", "alerts"},
		{"a password without a user", func(e *notify.Email) { e.URL = "smtp://mail.example.com:587" }, "password", "user"},
		{"no from", func(e *notify.Email) { e.From = "" }, "from", "empty"},
		{"a from that is no address", func(e *notify.Email) { e.From = "hookgate" }, "from", `"hookgate"`},
		{"no to", func(e *notify.Email) { e.To = nil }, "to", "empty"},
		{"a to that is no address", func(e *notify.Email) { e.To = []string{"ops@example.com", "ops at example"} }, "to[1]", `"ops at example"`},
		{"a negative timeout", func(e *notify.Email) { e.Timeout = -time.Second }, "timeout", "-1s"},
	}
	if _, err := notify.NewEmail(good); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := good
			c.edit(&e)
			_, err := notify.NewEmail(e)
			var fe *notify.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *FieldError", err)
			}
			if fe.Field != c.field || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %q (field %q), want field %q and %q", err, fe.Field, c.field, c.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}
