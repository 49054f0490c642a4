package natsjs_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/deliver/delivertest"
	"github.com/hookgate/hookgate/internal/deliver/natsjs"
	"github.com/hookgate/hookgate/internal/deliver/natsjs/natsjstest"
	"github.com/hookgate/hookgate/internal/pgtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open returns the sender of a NATS destination to url with subject,
// a timeout of 5 s and password (none when empty), closed when t ends.
func open(t *testing.T, url, subject, password string) deliver.Sender {
	t.Helper()
	d := config.Destination{Name: "bus", URL: url, Subject: subject, Timeout: config.Duration(5 * time.Second)}
	if password != "" {
		d.Password = config.NewSecret(password)
	}
	s, err := deliver.Open(d)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() {
		if err := s.(*natsjs.Sender).Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// closedPort is an address on the loopback nobody listens on.
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

// received is how delivertest reads a stored message; Where is its
// subject without the stream's prefix, which keeps each test's subjects
// apart.
func received(s *natsjstest.Stream, m *jetstream.RawStreamMsg) delivertest.Received {
	return delivertest.Received{ID: m.Header.Get(jetstream.MsgIDHeader), Payload: m.Data,
		Source: m.Header.Get("X-Hookgate-Source"), Type: m.Header.Get("X-Hookgate-Type"), Tenant: m.Header.Get("X-Hookgate-Tenant"),
		Where: strings.TrimPrefix(m.Subject, s.Prefix+".")}
}

func TestConformance(t *testing.T) {
	delivertest.Exercise(t, delivertest.Kind{
		Open: func(t *testing.T) (deliver.Sender, func(context.Context) ([]delivertest.Received, error)) {
			s := natsjstest.NewStream(t, natsjstest.Connect(t), 0)
			send := open(t, natsjstest.URL(), s.Prefix+".{source}.{type}", "")
			return send, func(ctx context.Context) ([]delivertest.Received, error) {
				ms, err := s.Read(ctx)
				var out []delivertest.Received
				for _, m := range ms {
					out = append(out, received(s, m))
				}
				return out, err
			}
		},
		Unreachable: func(t *testing.T) deliver.Sender {
			return open(t, "nats://"+closedPort(t), "hooks.{type}", "")
		},
		Where: "shop.orders.created",
	})
}

// A resend within the stream's duplicate window is acknowledged as a
// duplicate, counts as delivered, and leaves one message in the stream.
func TestResendWithinTheWindowIsOneMessage(t *testing.T) {
	t.Parallel()
	s := natsjstest.NewStream(t, natsjstest.Connect(t), time.Minute)
	send := open(t, natsjstest.URL(), s.Prefix+".{type}", "")
	m := delivertest.Message("msg_resent")
	first := send.Send(t.Context(), m)
	if !first.Delivered || first.Err != nil || !regexp.MustCompile(`^stream HG\w+ seq 1$`).MatchString(first.Body) {
		t.Fatalf("first Send = %+v, want delivered as seq 1", first)
	}
	again := send.Send(t.Context(), m)
	if !again.Delivered || again.Err != nil || !regexp.MustCompile(`^stream HG\w+: duplicate of seq 1$`).MatchString(again.Body) {
		t.Errorf("Send again = %+v, want delivered, a duplicate of seq 1", again)
	}
	got, err := s.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Errorf("the stream holds %d messages, want 1", len(got))
	}
}

// The subject is the template filled with the event's source, tenant and
// type; a character a subject cannot hold becomes '_', as does an empty
// token. The message carries hookgate's headers, which the event's own
// cannot replace.
func TestSubjectAndHeaders(t *testing.T) {
	t.Parallel()
	s := natsjstest.NewStream(t, natsjstest.Connect(t), 0)
	send := open(t, natsjstest.URL(), s.Prefix+".{source}.{tenant}.{type}", "")
	for _, c := range []struct{ tenant, typ, want string }{
		{"acme", "orders/create", "shop.acme.orders/create"},
		{"acme", "charge.succeeded", "shop.acme.charge.succeeded"},
		{"", "invoice paid", "shop._.invoice_paid"},
		{"a b", "*", "shop.a_b._"},
		{"acme", "orders.>", "shop.acme.orders._"},
		{"acme", ".a..b.", "shop.acme._.a._.b._"},
		{"acme", "tab\there\r\n", "shop.acme.tab_here__"},
	} {
		m := delivertest.Message("msg_" + c.want)
		m.Tenant, m.Type = c.tenant, c.typ
		m.ContentType = "application/x-www-form-urlencoded"
		m.Headers = map[string]string{"X-Hookgate-Event-Id": "evt_1", "webhook-id": "forged", "X-Hookgate-Type": "forged"}
		if out := send.Send(t.Context(), m); !out.Delivered {
			t.Fatalf("Send type %q = %+v, want delivered", c.typ, out)
		}
		got, err := s.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		r := got[len(got)-1]
		if r.Subject != s.Prefix+"."+c.want {
			t.Errorf("tenant %q, type %q: subject %q, want %q", c.tenant, c.typ, r.Subject, s.Prefix+"."+c.want)
		}
		want := map[string]string{
			jetstream.MsgIDHeader: m.WebhookID, "webhook-id": m.WebhookID, "Content-Type": m.ContentType,
			"X-Hookgate-Source": "shop", "X-Hookgate-Tenant": strings.TrimSpace(c.tenant), "X-Hookgate-Type": strings.TrimSpace(c.typ),
			"X-Hookgate-Event-Id": "evt_1",
		}
		for k, v := range want {
			if got := r.Header.Get(k); got != v {
				t.Errorf("type %q: header %s = %q, want %q", c.typ, k, got, v)
			}
		}
	}
}

// No stream takes the subject: the attempt fails, to be retried once the
// operator created one, and says so.
func TestNoStreamIsRetryable(t *testing.T) {
	t.Parallel()
	natsjstest.Connect(t)
	send := open(t, natsjstest.URL(), "hgnostream.{source}.{type}", "")
	out := send.Send(t.Context(), delivertest.Message("msg_nowhere"))
	if out.Delivered || !out.Retryable || out.Err == nil ||
		!strings.Contains(out.Err.Error(), `no JetStream stream takes subject "hgnostream.shop.orders.created"`) {
		t.Errorf("Send = %+v, want a retryable failure naming the subject no stream takes", out)
	}
}

// A PubAck that does not come within the destination's timeout fails the
// attempt, retryably.
func TestNoAckWithinTheTimeout(t *testing.T) {
	t.Parallel()
	s := natsjstest.NewStream(t, natsjstest.Connect(t), 0)
	proxy, addr := pgtest.NewTCPProxy(t, natsjstest.Addr(t))
	d := config.Destination{Name: "bus", URL: "nats://" + addr, Subject: s.Prefix + ".{type}", Timeout: config.Duration(300 * time.Millisecond)}
	send, err := natsjs.New(d)
	if err != nil {
		t.Fatal(err)
	}
	defer send.Close()
	waitDelivered(t, send, "msg_before")
	proxy.Hang()
	defer proxy.Restore()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out := send.Send(ctx, delivertest.Message("msg_unanswered"))
	if out.Delivered || !out.Retryable || out.Err == nil || !strings.Contains(out.Err.Error(), "no PubAck within 300ms") {
		t.Errorf("Send through a hung connection = %+v, want a retryable failure for want of a PubAck", out)
	}
	if ctx.Err() != nil {
		t.Errorf("Send took the whole 30 s: the destination's timeout did not end it")
	}
}

// A message larger than the server takes will never pass: the attempt is
// refused, not retried.
func TestTooLargeIsRefused(t *testing.T) {
	t.Parallel()
	s := natsjstest.NewStream(t, natsjstest.Connect(t), 0)
	send := open(t, natsjstest.URL(), s.Prefix+".{type}", "")
	waitDelivered(t, send, "msg_small")
	m := delivertest.Message("msg_large")
	m.Payload = bytes.Repeat([]byte("x"), 16<<20)
	if out := send.Send(t.Context(), m); out.Delivered || out.Retryable || out.Err == nil {
		t.Errorf("Send of 16 MiB = %+v, want refused", out)
	}
}

// waitDelivered sends a message with id until it is delivered, for 20
// seconds: the connection is made in the background.
func waitDelivered(t *testing.T, send deliver.Sender, id string) deliver.Outcome {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := send.Send(t.Context(), delivertest.Message(id))
		if out.Delivered {
			return out
		}
		if !out.Retryable {
			t.Fatalf("Send = %+v, want delivered or a retryable failure", out)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered in 20 s: %+v", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A gateway starts while the broker is down; its sends fail, retryably,
// until the broker is back, and again while the connection is cut.
func TestBrokerDownAtStartAndCut(t *testing.T) {
	t.Parallel()
	s := natsjstest.NewStream(t, natsjstest.Connect(t), 0)
	proxy, addr := pgtest.NewTCPProxy(t, natsjstest.Addr(t))
	proxy.Cut()
	send := open(t, "nats://"+addr, s.Prefix+".{type}", "")
	out := send.Send(t.Context(), delivertest.Message("msg_down"))
	if out.Delivered || !out.Retryable || out.Err == nil || !strings.Contains(out.Err.Error(), "not connected to nats://"+addr) {
		t.Errorf("Send while the broker is down = %+v, want a retryable failure saying so", out)
	}
	proxy.Restore()
	waitDelivered(t, send, "msg_up")
	proxy.Cut()
	if out := send.Send(t.Context(), delivertest.Message("msg_cut")); out.Delivered || !out.Retryable {
		t.Errorf("Send while cut = %+v, want a retryable failure", out)
	}
	proxy.Restore()
	waitDelivered(t, send, "msg_back")
	got, err := s.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// msg_cut may have reached the stream before its connection was
	// found gone: its attempt failed, and a retry would be a duplicate.
	var ids []string
	for _, m := range got {
		ids = append(ids, m.Header.Get(jetstream.MsgIDHeader))
	}
	if slices.Contains(ids, "msg_down") || !slices.Contains(ids, "msg_up") || !slices.Contains(ids, "msg_back") {
		t.Errorf("the stream holds %q, want msg_up and msg_back and never msg_down", ids)
	}
}

// While the server cannot be reached, an attempt says why, once the
// connection was tried again.
func TestUnreachableSaysWhy(t *testing.T) {
	t.Parallel()
	send := open(t, "nats://"+closedPort(t), "hooks.{type}", "")
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := send.Send(t.Context(), delivertest.Message("msg_refused"))
		if out.Delivered || !out.Retryable || out.Err == nil {
			t.Fatalf("Send = %+v, want a retryable failure", out)
		}
		if strings.Contains(out.Err.Error(), "connection refused") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s the attempt still says %q, not why", out.Err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// natsServer starts a nats-server of t's own with JetStream and the
// options args, and returns its address; it stops when t ends.
func natsServer(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		natsjstest.Unavailable(t, "nats-server", err)
	}
	cmd := exec.Command(bin, append([]string{"-a", "127.0.0.1", "-p", "-1", "-js", "-sd", t.TempDir()}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	listening := regexp.MustCompile(`Listening for client connections on (\S+)`)
	found := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			if m := listening.FindStringSubmatch(lines.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case addr := <-found:
		return addr
	case <-time.After(30 * time.Second):
		t.Fatal("nats-server did not listen within 30 s")
		return ""
	}
}

// The user comes from the URL and the password from its reference; a
// wrong password fails the attempt without showing it.
func TestPassword(t *testing.T) {
	t.Parallel()
	const user, password = "hookgate", "s3cret-Pa55"
	addr := natsServer(t, "--user", user, "--pass", password)
	nc, err := nats.Connect("nats://"+addr, nats.UserInfo(user, password))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "HOOKS", Subjects: []string{"hooks.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, open(t, "nats://"+user+"@"+addr, "hooks.{type}", password), "msg_signed_in")

	// The sender connects in the background: an attempt made before its
	// first connect is refused has no reason to give yet. Every attempt
	// fails retryably, and one made after the refusal says why.
	wrong := open(t, "nats://"+user+"@"+addr, "hooks.{type}", "not-"+password)
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := wrong.Send(t.Context(), delivertest.Message("msg_refused"))
		if out.Delivered || !out.Retryable || out.Err == nil {
			t.Fatalf("Send with a wrong password = %+v, want a retryable failure", out)
		}
		if strings.Contains(out.Err.Error(), password) {
			t.Fatalf("the error shows the password: %v", out.Err)
		}
		if strings.Contains(strings.ToLower(out.Err.Error()), "authorization") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no attempt in 20 s said why: %+v", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// New refuses what can never deliver: a subject with an empty token, a
// URL that is not a NATS server's; its errors do not show the password.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	for _, d := range []config.Destination{
		{Name: "bus", URL: "nats://127.0.0.1:4222", Subject: "hooks..{type}"},
		{Name: "bus", URL: "nats://127.0.0.1:4222", Subject: "hooks.{type}."},
		{Name: "bus", URL: "nats://127.0.0.1:4222", Subject: ""},
		{Name: "bus", URL: "nats:///nohost", Subject: "hooks.{type}"},
	} {
		d.Password = config.NewSecret("pa55word")
		s, err := natsjs.New(d)
		if err == nil {
			s.Close()
			t.Errorf("New(%q, subject %q) = nil error, want refused", d.URL, d.Subject)
			continue
		}
		if strings.Contains(err.Error(), "pa55word") {
			t.Errorf("New(%q): the error shows the password: %v", d.URL, err)
		}
	}
}

// Close ends the connection: a send after it fails, and says why.
func TestClosed(t *testing.T) {
	t.Parallel()
	s := natsjstest.NewStream(t, natsjstest.Connect(t), 0)
	send, err := natsjs.New(config.Destination{Name: "bus", URL: natsjstest.URL(), Subject: s.Prefix + ".{type}"})
	if err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, send, "msg_open")
	if err := send.Close(); err != nil {
		t.Fatal(err)
	}
	out := send.Send(t.Context(), delivertest.Message("msg_closed"))
	if out.Delivered || out.Err == nil || !strings.Contains(out.Err.Error(), "closed") {
		t.Errorf("Send after Close = %+v, want the connection closed", out)
	}
}

// authority is a certificate authority made for one test.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // its certificate, PEM
}

// newAuthority makes a CA and writes its certificate under dir.
func newAuthority(t *testing.T, dir, name string) *authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	a := &authority{cert: cert, key: key, file: filepath.Join(dir, name+".pem")}
	writePEM(t, a.file, "CERTIFICATE", der)
	return a
}

// issue writes a certificate signed by a for 127.0.0.1, for a server
// and a client, and its key, under dir, and returns their files.
func (a *authority) issue(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", pk)
	return certFile, keyFile
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tls:// verifies the server against the CA of cacertfile and presents
// the client certificate of certfile and keyfile, as the server
// requires; a server whose CA is another's is not trusted, and a client
// without a certificate is not let in.
func TestTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := newAuthority(t, dir, "ca")
	serverCert, serverKey := ca.issue(t, dir, "server")
	clientCert, clientKey := ca.issue(t, dir, "client")
	addr := natsServer(t, "--tlsverify", "--tlscert", serverCert, "--tlskey", serverKey, "--tlscacert", ca.file)
	nc, err := nats.Connect("tls://"+addr, nats.RootCAs(ca.file), nats.ClientCert(clientCert, clientKey))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "HOOKS", Subjects: []string{"hooks.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	files := "?cacertfile=" + ca.file + "&certfile=" + clientCert + "&keyfile=" + clientKey
	waitDelivered(t, open(t, "tls://"+addr+files, "hooks.{type}", ""), "msg_tls")

	other := newAuthority(t, t.TempDir(), "other")
	for name, u := range map[string]string{
		"another CA":     "tls://" + addr + "?cacertfile=" + other.file + "&certfile=" + clientCert + "&keyfile=" + clientKey,
		"no client cert": "tls://" + addr + "?cacertfile=" + ca.file,
	} {
		send := open(t, u, "hooks.{type}", "")
		deadline := time.Now().Add(20 * time.Second)
		for {
			out := send.Send(t.Context(), delivertest.Message("msg_untrusted"))
			if out.Delivered || !out.Retryable || out.Err == nil {
				t.Fatalf("%s: Send = %+v, want a retryable failure", name, out)
			}
			// The reason comes once the connection was tried again.
			if strings.Contains(out.Err.Error(), "certificate") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: after 20 s the attempt says %q, not why", name, out.Err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// The URL's query names the TLS files and nothing else; a file that is
// not there stops New.
func TestTLSFilesRefused(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"tls://127.0.0.1:4222?cafile=/etc/ca.pem",
		"tls://127.0.0.1:4222?certfile=/etc/client.pem",
		"tls://127.0.0.1:4222?cacertfile=/nonexistent/ca.pem",
	} {
		if s, err := natsjs.New(config.Destination{Name: "bus", URL: u, Subject: "hooks.{type}"}); err == nil {
			s.Close()
			t.Errorf("New(%q) = nil error, want refused", u)
		}
	}
}
