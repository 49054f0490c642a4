package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// listenToken is the admin token of the listen tests' gateways.
const listenToken = "listen-test-admin-token-0123456789abcdef"

// listenStripeSecret and listenStdSecret are the secrets of the gateway's
// two sources, stripe (stripe) and std (standard).
const (
	listenStripeSecret = "whsec_listen_stripe_secret"
	listenStdSecret    = "whsec_bGlzdGVuLXN0YW5kYXJkLXNlY3JldC0xMjM0NQ=="
)

// gateway is a running `hookgate serve` with the admin API on a listener
// of its own.
type gateway struct {
	config string // its config, the token a file: reference
	intake string // base URL of /in
	admin  string // base URL of /api
}

// gatewayConfig writes the config of a gateway on database db with the
// admin API at adminAddr; tokenRef is how admin.token is read.
func gatewayConfig(t *testing.T, db, adminAddr, tokenRef string) string {
	t.Helper()
	return writeText(t, "hookgate.yaml", fmt.Sprintf(`listen: 127.0.0.1:%d
database: %s
admin:
  token: %s
  listen: %s
sources:
  - name: stripe
    provider: stripe
    secret: file:%s
  - name: std
    provider: standard
    secret: file:%s
`, closedPort(t), db, tokenRef, adminAddr, writeText(t, "stripe-secret", listenStripeSecret), writeText(t, "std-secret", listenStdSecret)))
}

// startGateway starts serve on database db (a new one when empty).
func startGateway(t *testing.T, db string) *gateway {
	t.Helper()
	if db == "" {
		db = "sqlite:" + filepath.Join(t.TempDir(), "hookgate.db")
	}
	adminAddr := fmt.Sprintf("127.0.0.1:%d", closedPort(t))
	g := &gateway{config: gatewayConfig(t, db, adminAddr, "file:"+writeText(t, "admin-token", listenToken)), admin: "http://" + adminAddr}
	g.intake = startServe(t, "--config", g.config).addr
	return g
}

// stripeBody is a Stripe event, spaced as Stripe spaces it: the app must
// get these bytes.
func stripeBody(id string) []byte {
	return fmt.Appendf(nil, "{\n  \"id\": %q,\n  \"object\": \"event\",\n  \"type\": \"charge.succeeded\",\n  \"created\": %d,\n"+
		"  \"data\": {\n    \"object\": {\n      \"id\": \"ch_%s\",\n      \"object\": \"charge\",\n      \"status\": \"succeeded\"\n    }\n  }\n}\n",
		id, time.Now().Unix(), id)
}

// sendStripe posts a signed Stripe event to the gateway, wants it
// accepted, and returns its body and its inbox id.
func (g *gateway) sendStripe(t *testing.T, id string) ([]byte, int64) {
	t.Helper()
	body := stripeBody(id)
	s, err := verify.NewStripe(listenStripeSecret)
	if err != nil {
		t.Fatal(err)
	}
	return body, g.post(t, "stripe", body, s, nil)
}

// sendStd posts a Standard Webhooks event with the given webhook-id to the
// std source and returns its body and inbox id.
func (g *gateway) sendStd(t *testing.T, msgID string) ([]byte, int64) {
	t.Helper()
	body := fmt.Appendf(nil, "{ \"type\": \"contact.created\", \"id\": %q }", msgID)
	s, err := verify.NewStandard(listenStdSecret)
	if err != nil {
		t.Fatal(err)
	}
	return body, g.post(t, "std", body, s, http.Header{"Webhook-Id": {msgID}})
}

func (g *gateway) post(t *testing.T, source string, body []byte, s verify.Signer, h http.Header) int64 {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, g.intake+"/in/"+source, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	if err := s.Sign(req, body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Events []struct{ ID int64 }
	}
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &answer); err != nil || resp.StatusCode != http.StatusAccepted || len(answer.Events) != 1 {
		t.Fatalf("POST /in/%s: %s %s, want 202 and one event", source, resp.Status, data)
	}
	return answer.Events[0].ID
}

// app is the application listen forwards to: it records every request and
// answers with the code it is set to.
type app struct {
	url  string
	got  chan request
	mu   sync.Mutex
	code int
}

// request is one request the app got, and what it answered.
type request struct {
	header http.Header
	body   []byte
	code   int
}

// id is the "id" of a request's JSON body.
func (r request) id() string {
	var v struct{ ID string }
	json.Unmarshal(r.body, &v)
	return v.ID
}

func newApp(t *testing.T) *app {
	t.Helper()
	a := &app{got: make(chan request, 1000), code: http.StatusOK}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		code := a.code
		a.mu.Unlock()
		a.got <- request{header: r.Header.Clone(), body: body, code: code}
		w.WriteHeader(code)
		if code >= 300 {
			io.WriteString(w, "the app is down for a moment")
		}
	}))
	t.Cleanup(srv.Close)
	a.url = srv.URL + "/hooks"
	return a
}

// answer sets the code the app answers with from now on.
func (a *app) answer(code int) {
	a.mu.Lock()
	a.code = code
	a.mu.Unlock()
}

// next returns the next request the app got.
func (a *app) next(t *testing.T) request {
	t.Helper()
	select {
	case r := <-a.got:
		return r
	case <-time.After(lineWait):
		t.Fatalf("the app got no request within %s", lineWait)
	}
	return request{}
}

// listener is a running `hookgate listen`.
type listener struct {
	cmd    *exec.Cmd
	stdout <-chan string
	stderr <-chan string
	// secret is the whsec_ it printed; empty with --raw.
	secret string
}

var (
	listenSecretLine = regexp.MustCompile(`\bwhsec_[A-Za-z0-9+/=]+`)
	// forwardLine is a line of listen's stdout: time, inbox id, type,
	// source, the app's status (or error), latency, and after a failure
	// what happened.
	forwardLine = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  (\d+)  (\S+)  (\S+)  (\d{3}|error)  (\d\S*s)(?:  (.+))?$`)
)

// startListen starts `hookgate listen args...` with cache as its cache
// directory and env added to its environment, and waits until it says it
// is ready.
func startListen(t *testing.T, cache string, env []string, args ...string) *listener {
	t.Helper()
	l := runListen(t, cache, env, args...)
	for {
		line := nextErr(t, l.stderr)
		if s := listenSecretLine.FindString(line); s != "" {
			l.secret = s
		}
		if strings.HasPrefix(line, "hookgate listen: ready") {
			return l
		}
	}
}

// runListen starts `hookgate listen args...` without waiting.
func runListen(t *testing.T, cache string, env []string, args ...string) *listener {
	t.Helper()
	cmd := command(t, append([]string{"listen"}, args...)...)
	cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+cache)
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return &listener{cmd: cmd, stdout: lines(stdout), stderr: logged(t, lines(stderr))}
}

// logged passes ch on, writing each line to the test's log.
func logged(t *testing.T, ch <-chan string) <-chan string {
	out := make(chan string, 100)
	go func() {
		defer close(out)
		for l := range ch {
			t.Logf("listen: %s", l)
			out <- l
		}
	}()
	return out
}

// nextErr is the next line of stderr.
func nextErr(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("listen's stderr ended")
		}
		return l
	case <-time.After(lineWait):
		t.Fatalf("listen printed nothing on stderr within %s", lineWait)
	}
	return ""
}

// waitErr returns the first line of stderr that contains s.
func (l *listener) waitErr(t *testing.T, s string) string {
	t.Helper()
	for {
		if line := nextErr(t, l.stderr); strings.Contains(line, s) {
			return line
		}
	}
}

// line returns the next line of stdout, parsed: id, type, source, status,
// and the message of a failure.
func (l *listener) line(t *testing.T) (id int64, typ, source, status, msg string) {
	t.Helper()
	s := next(t, l.stdout)
	m := forwardLine.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("listen printed %q, want TIME  ID  TYPE  SOURCE  STATUS  LATENCY[  ERROR]", s)
	}
	id, _ = strconv.ParseInt(m[1], 10, 64)
	return id, m[2], m[3], m[4], m[6]
}

// interrupt stops listen with SIGINT and wants exit status 0.
func (l *listener) interrupt(t *testing.T) {
	t.Helper()
	if err := l.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Wait(); err != nil {
		t.Fatalf("listen after SIGINT: %v, want exit status 0", err)
	}
}

// kill stops listen with SIGKILL: nothing is saved on the way out.
func (l *listener) kill(t *testing.T) {
	t.Helper()
	l.cmd.Process.Kill()
	l.cmd.Wait()
}

// signed checks that r is signed with secret under Standard Webhooks.
func signed(t *testing.T, r request, secret string) {
	t.Helper()
	v, err := verify.NewStandard(secret)
	if err != nil {
		t.Fatalf("the printed secret %q: %v", secret, err)
	}
	if err := v.Verify(&http.Request{Header: r.header}, r.body); err != nil {
		t.Errorf("request %s: %v (headers %v)", r.id(), err, r.header)
	}
}

// TestListenForwardsOnceAcrossRestarts is what listen is for: an event
// stored while it runs reaches the app with its body as sent, signed with
// the secret listen printed, and a line says so; after Ctrl-C (exit
// status 0), the events stored while it was off arrive when it starts
// again, each once, in order, with the same secret, and none of those
// that arrived before. The token is read from the config through an env:
// reference.
func TestListenForwardsOnceAcrossRestarts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	g := startGateway(t, "")
	// listen reads a config of its own whose token is an env: reference.
	envConfig := strings.Replace(readText(t, g.config), "token: file:", "token: env:HOOKGATE_LISTEN_TEST_TOKEN\n  # was: file:", 1)
	config := writeText(t, "listen.yaml", envConfig)
	env := []string{"HOOKGATE_LISTEN_TEST_TOKEN=" + listenToken}
	a := newApp(t)
	cache := t.TempDir()
	g.sendStripe(t, "evt_before")
	args := []string{"--config", config, "--forward", a.url, "--interval", "50ms"}

	l := startListen(t, cache, env, args...)
	if l.secret == "" {
		t.Fatal("listen printed no whsec_ secret")
	}
	body, id := g.sendStripe(t, "evt_1")
	r := a.next(t)
	if r.id() != "evt_1" || !bytes.Equal(r.body, body) {
		t.Fatalf("the app got %q, want evt_1 as sent:\n%s", r.body, body)
	}
	signed(t, r, l.secret)
	if r.header.Get("Content-Type") != "application/json" || r.header.Get("X-Hookgate-Source") != "stripe" ||
		r.header.Get("X-Hookgate-Entity") != "charge/ch_evt_1" {
		t.Errorf("headers %v, want the event's Content-Type and X-Hookgate-* headers", r.header)
	}
	if gotID, typ, source, status, msg := l.line(t); gotID != id || typ != "charge.succeeded" || source != "stripe" || status != "200" || msg != "" {
		t.Errorf("line: %d %s %s %s %q, want %d charge.succeeded stripe 200", gotID, typ, source, status, msg, id)
	}
	l.interrupt(t)

	var want []string
	for i := 2; i <= 11; i++ {
		want = append(want, fmt.Sprintf("evt_%d", i))
		g.sendStripe(t, want[len(want)-1])
	}
	l = startListen(t, cache, env, args...)
	for _, w := range want {
		r := a.next(t)
		if r.id() != w {
			t.Fatalf("after the restart the app got %s, want %s (in order, each once)", r.id(), w)
		}
		signed(t, r, l.secret)
		if _, _, _, status, _ := l.line(t); status != "200" {
			t.Errorf("%s: line with status %s", w, status)
		}
	}
	g.sendStripe(t, "evt_last")
	if r := a.next(t); r.id() != "evt_last" {
		t.Errorf("after the ten the app got %s, want evt_last: an event came twice", r.id())
	}
	l.interrupt(t)
}

// TestListenRetries: an event the app refuses is sent again, with the
// same webhook-id, until the app takes it, and once taken it is not sent
// again; later events wait for it. listen killed while the app refuses
// an event sends it again when started: the cursor did not pass it.
func TestListenRetries(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	g := startGateway(t, "")
	a := newApp(t)
	cache := t.TempDir()
	args := []string{"--url", g.admin, "--token", listenToken, "--forward", a.url, "--interval", "50ms"}
	l := startListen(t, cache, nil, args...)

	a.answer(http.StatusInternalServerError)
	g.sendStripe(t, "evt_1")
	g.sendStripe(t, "evt_2")
	first := a.next(t)
	if first.id() != "evt_1" || first.code != 500 {
		t.Fatalf("the app got %s (answered %d), want evt_1", first.id(), first.code)
	}
	if _, _, _, status, msg := l.line(t); status != "500" || !strings.Contains(msg, "500 Internal Server Error: the app is down for a moment") ||
		!strings.Contains(msg, "retrying in ") {
		t.Errorf("failure line: %s %q, want the 500, the app's answer and when it retries", status, msg)
	}
	r := a.next(t)
	if r.id() != "evt_1" || r.header.Get("Webhook-Id") != first.header.Get("Webhook-Id") || r.header.Get("Webhook-Id") == "" {
		t.Fatalf("after a 500 the app got %s with webhook-id %q, want evt_1 again with %q", r.id(), r.header.Get("Webhook-Id"), first.header.Get("Webhook-Id"))
	}
	a.answer(http.StatusOK)
	for _, w := range []string{"evt_1", "evt_2"} {
		for r = a.next(t); r.code != 200; r = a.next(t) {
			if r.id() != "evt_1" {
				t.Fatalf("while evt_1 failed the app got %s", r.id())
			}
		}
		if r.id() != w {
			t.Fatalf("the app took %s, want %s", r.id(), w)
		}
	}

	// Killed while the app refuses evt_3, listen sends it again on its
	// next start.
	a.answer(http.StatusServiceUnavailable)
	g.sendStripe(t, "evt_3")
	if r := a.next(t); r.id() != "evt_3" || r.code != 503 {
		t.Fatalf("the app got %s (%d), want evt_3 refused", r.id(), r.code)
	}
	l.kill(t)
	l = startListen(t, cache, nil, args...)
	if r := a.next(t); r.id() != "evt_3" {
		t.Fatalf("after SIGKILL and a restart the app got %s, want evt_3 again", r.id())
	}
	a.answer(http.StatusOK)
	for r := a.next(t); r.code != 200; r = a.next(t) {
		if r.id() != "evt_3" {
			t.Fatalf("while evt_3 failed the app got %s", r.id())
		}
	}
	g.sendStripe(t, "evt_4")
	if r := a.next(t); r.id() != "evt_4" || r.code != 200 {
		t.Errorf("after evt_3 was taken the app got %s (%d), want evt_4: evt_3 came again", r.id(), r.code)
	}
	l.interrupt(t)
}
