package cli_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/notify"
	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/verify"
)

// opsSecret signs the webhook alert channel's requests.
const opsSecret = "whsec_b3BzLXNlY3JldC1mb3ItYWxlcnQtdGVzdHM="

// alertSinks receive what the alert channels send: an operational
// webhook receiver that checks each request's signature, and a receiver
// shaped like Slack's incoming webhooks.
type alertSinks struct {
	t       *testing.T
	webhook *httptest.Server
	slack   *httptest.Server

	smtp string // the relay's address

	mu       sync.Mutex
	messages []notify.Message // by the webhook, in arrival order
	slacked  []string         // the text of each Slack message
	mailed   []string         // the subject of each e-mail
}

func newAlertSinks(t *testing.T) *alertSinks {
	t.Helper()
	s := &alertSinks{t: t}
	v, err := verify.NewStandard(opsSecret)
	if err != nil {
		t.Fatal(err)
	}
	s.webhook = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := v.Verify(r, body); err != nil {
			t.Errorf("alert webhook: %v", err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var m notify.Message
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("alert webhook body %s: %v", body, err)
		}
		s.mu.Lock()
		s.messages = append(s.messages, m)
		s.mu.Unlock()
	}))
	t.Cleanup(s.webhook.Close)
	s.slack = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			Text   string            `json:"text"`
			Blocks []json.RawMessage `json:"blocks"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || m.Text == "" || len(m.Blocks) == 0 {
			t.Errorf("slack message without text or blocks: %v", err)
		}
		s.mu.Lock()
		s.slacked = append(s.slacked, m.Text)
		s.mu.Unlock()
		io.WriteString(w, "ok")
	}))
	t.Cleanup(s.slack.Close)
	s.startRelay()
	return s
}

// startRelay starts an SMTP relay on loopback, without TLS or
// authentication, that keeps the subject of every mail.
func (s *alertSinks) startRelay() {
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &relaySession{s}, nil }))
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	s.smtp = l.Addr().String()
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(l)
	}()
	s.t.Cleanup(func() {
		srv.Close()
		<-done
	})
}

// relaySession is one SMTP session of the relay.
type relaySession struct{ s *alertSinks }

func (r *relaySession) Mail(string, *smtp.MailOptions) error { return nil }
func (r *relaySession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (r *relaySession) Reset()                               {}
func (r *relaySession) Logout() error                        { return nil }

func (r *relaySession) Data(data io.Reader) error {
	msg, err := mail.ReadMessage(data)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, msg.Body)
	r.s.mu.Lock()
	r.s.mailed = append(r.s.mailed, msg.Header.Get("Subject"))
	r.s.mu.Unlock()
	return nil
}

// config is the alerts section sending to the sinks, checking every
// 100 ms; the Slack URL is kept in a file under dir, as a secret.
func (s *alertSinks) config(dir string) string {
	s.t.Helper()
	slackFile := dir + "/slack-url"
	if err := os.WriteFile(slackFile, []byte(s.slack.URL+"/services/T0/B0/x"), 0o600); err != nil {
		s.t.Fatal(err)
	}
	secretFile := dir + "/ops-secret"
	if err := os.WriteFile(secretFile, []byte(opsSecret), 0o600); err != nil {
		s.t.Fatal(err)
	}
	return fmt.Sprintf(`alerts:
  check_every: 100ms
  auth_window: 1m
  channels:
    - name: ops-hook
      type: webhook
      url: %s/alerts
      secret: file:%s
    - name: ops-slack
      type: slack
      url: file:%s
    - name: oncall
      type: email
      smtp: smtp://%s
      from: hookgate@example.com
      to: [oncall@example.com]
      kinds: [destination.failing, source.auth_failures, source.silent]
`, s.webhook.URL, secretFile, slackFile, s.smtp)
}

// got returns the messages received by the webhook, and the number of
// Slack messages and of e-mails.
func (s *alertSinks) got() ([]notify.Message, int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.messages), len(s.slacked), len(s.mailed)
}

// waitFor waits until the webhook received a message of typ and change
// and Slack and e-mail as many messages as the webhook, and returns it.
func (s *alertSinks) waitFor(typ string, change notify.Change) notify.Message {
	s.t.Helper()
	var found notify.Message
	eventually(s.t, typ+" "+string(change)+" on every channel", func() bool {
		ms, slacked, mailed := s.got()
		for _, m := range ms {
			if m.Type == typ && m.Change == change {
				found = m
				return slacked >= len(ms) && mailed >= len(ms)
			}
		}
		return false
	})
	return found
}

// checkOnce fails t unless each channel received exactly one message of
// each of changes, and nothing else.
func (s *alertSinks) checkOnce(changes ...string) {
	s.t.Helper()
	s.checkOnceThen("", changes...)
}

// checkOnceThen is checkOnce where a notice of next may also have come
// after the changes, on any channel: one the gateway may rightly send
// while the test checks.
func (s *alertSinks) checkOnceThen(next string, changes ...string) {
	s.t.Helper()
	ms, slacked, mailed := s.got()
	var got []string
	for _, m := range ms {
		got = append(got, m.Type+" "+string(m.Change))
	}
	n := len(changes)
	if next != "" && len(got) == n+1 && got[n] == next {
		got = got[:n]
	}
	extra := func(count int) bool { return count == n || next != "" && count == n+1 }
	if !slices.Equal(got, changes) || !extra(slacked) || !extra(mailed) {
		s.t.Errorf("webhook got %q, Slack %d messages, e-mail %d; want %q on each", got, slacked, mailed, changes)
	}
}

// flakySink is a destination that answers 503 until up.
type flakySink struct {
	*httptest.Server
	up        atomic.Bool
	delivered atomic.Int64
}

func newFlakySink(t *testing.T) *flakySink {
	f := &flakySink{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !f.up.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		f.delivered.Add(1)
	}))
	t.Cleanup(f.Close)
	return f
}

// alertConfigs writes the configuration of n nodes on database, whose app
// source delivers to sink with a circuit that opens after 3 failures and
// probes every 500 ms, and alerts to sinks; extra is appended to the
// source.
func alertConfigs(t *testing.T, database func(i int) string, n int, sink string, sinks *alertSinks, extra string) []string {
	t.Helper()
	dir := t.TempDir()
	secretFile := dir + "/secret"
	if err := os.WriteFile(secretFile, []byte(crashSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	alerts := sinks.config(dir)
	paths := make([]string, n)
	for i := range paths {
		cfg := fmt.Sprintf(`listen: 127.0.0.1:0
%sworkers: 2
lease: 3s
%ssources:
  - name: app
    provider: standard
    secret: file:%s
%s    destinations:
      - name: sink
        url: %s/hooks
        timeout: 2s
        retry_initial: 50ms
        retry_max_delay: 200ms
        pause_after: 3
        pause_for: 500ms
`, database(i), alerts, secretFile, extra, sink)
		paths[i] = fmt.Sprintf("%s/node%d.yaml", dir, i)
		if err := os.WriteFile(paths[i], []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// A destination down long enough to open its circuit gives one
// destination.failing on each channel, and one destination.recovered once
// it is back, with the events it missed counted; with three nodes on one
// PostgreSQL database still one of each.
func TestAlertDestinationFailingOnThreeNodes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	db := pooled(t, pgtest.New(t))
	sink, sinks := newFlakySink(t), newAlertSinks(t)
	paths := alertConfigs(t, func(i int) string { return nodeDatabase(t, db, i) }, 3, sink.URL, sinks, "")
	ps := make([]*process, len(paths))
	for i, p := range paths {
		ps[i] = startServe(t, "--config", p)
	}
	alertFailingAndRecovered(t, ps, sink, sinks)
}

// The same on one node on SQLite, restarted while the incident is open:
// the restart neither repeats the opening nor loses the recovery.
func TestAlertSurvivesARestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	dir := t.TempDir()
	sink, sinks := newFlakySink(t), newAlertSinks(t)
	paths := alertConfigs(t, func(int) string { return "database: sqlite:" + dir + "/hookgate.db\n" }, 1, sink.URL, sinks, "")
	p := startServe(t, "--config", paths[0])
	src := signer(t)
	client := &http.Client{Timeout: 10 * time.Second}
	if st, err := send(t.Context(), client, src, p.addr, "evt_before"); err != nil || st != http.StatusAccepted {
		t.Fatalf("send: %d %v", st, err)
	}
	sinks.waitFor("destination.failing", notify.Opened)
	// The kill comes once the node has recorded the notices it sent: one
	// received but not yet recorded is rightly sent again, after its
	// lease of a minute, which is not what this test looks at.
	incidents, ok := openDB(t, "sqlite:"+dir+"/hookgate.db").(inbox.Incidents)
	if !ok {
		t.Fatal("the SQLite inbox keeps no incidents")
	}
	eventually(t, "the opened notices recorded as sent", func() bool {
		open, err := incidents.ListIncidents(t.Context(), false, 10)
		if err != nil || len(open) != 1 {
			return false
		}
		ns, err := incidents.Notices(t.Context(), open[0].ID)
		if err != nil || len(ns) == 0 {
			return false
		}
		for _, n := range ns {
			if n.Status != inbox.NoticeSent {
				return false
			}
		}
		return true
	})
	p.cmd.Process.Kill()
	p.cmd.Wait()
	startServe(t, "--config", paths[0])
	sink.up.Store(true)
	m := sinks.waitFor("destination.recovered", notify.Resolved)
	if m.Counts["delivered_late"] < 1 {
		t.Errorf("recovered with counts %v, want the event delivered late", m.Counts)
	}
	sinks.checkOnce("destination.failing opened", "destination.recovered resolved")
	out, err := command(t, "incidents", "--all", "--json", "--config", paths[0]).Output()
	if err != nil {
		t.Fatalf("hookgate incidents: %v", err)
	}
	var inc struct {
		Kind       string           `json:"kind"`
		ResolvedAt *time.Time       `json:"resolved_at"`
		Counts     map[string]int64 `json:"counts"`
	}
	if err := json.Unmarshal(out, &inc); err != nil || inc.Kind != "destination.failing" || inc.ResolvedAt == nil || inc.Counts["dead_before"] != 0 {
		t.Errorf("hookgate incidents --all --json = %s (%v), want the one ended destination.failing, without the engine's own counts", out, err)
	}
}

// alertFailingAndRecovered sends events to the nodes while the sink is
// down, waits for destination.failing, brings the sink up, waits for
// destination.recovered, and checks that each came once on each channel.
func alertFailingAndRecovered(t *testing.T, ps []*process, sink *flakySink, sinks *alertSinks) {
	t.Helper()
	src := signer(t)
	client := &http.Client{Timeout: 10 * time.Second}
	for i, p := range ps {
		if st, err := send(t.Context(), client, src, p.addr, fmt.Sprintf("evt_%d", i)); err != nil || st != http.StatusAccepted {
			t.Fatalf("send to node %d: %d %v", i, st, err)
		}
	}
	opened := sinks.waitFor("destination.failing", notify.Opened)
	if opened.Source != "app" || opened.Destination != "sink" || opened.Counts["failed_attempts"] < 3 {
		t.Errorf("opened = %+v, want app's sink after at least 3 failed attempts", opened)
	}
	sink.up.Store(true)
	eventually(t, "the events delivered", func() bool { return sink.delivered.Load() >= int64(len(ps)) })
	recovered := sinks.waitFor("destination.recovered", notify.Resolved)
	if recovered.Incident != opened.Incident || recovered.Counts["delivered_late"] != int64(len(ps)) || recovered.Counts["dead"] != 0 {
		t.Errorf("recovered = %+v, want incident %s with %d delivered late and none dead", recovered, opened.Incident, len(ps))
	}
	sinks.checkOnce("destination.failing opened", "destination.recovered resolved")
}

// A source that hears nothing for longer than its expect_every opens
// source.silent, resolved by its next event; 50 refused signatures
// within auth_window open source.auth_failures.
func TestAlertSilenceAndRefusedSignatures(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	dir := t.TempDir()
	sink, sinks := newFlakySink(t), newAlertSinks(t)
	sink.up.Store(true)
	paths := alertConfigs(t, func(int) string { return "database: sqlite:" + dir + "/hookgate.db\n" }, 1, sink.URL, sinks, "    expect_every: 1s\n")
	p := startServe(t, "--config", paths[0])
	silent := sinks.waitFor("source.silent", notify.Opened)
	if silent.Source != "app" {
		t.Errorf("silent = %+v, want source app", silent)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range 50 {
		req, err := http.NewRequest(http.MethodPost, p.addr+"/in/app", strings.NewReader(`{"type":"order.created"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("webhook-id", fmt.Sprintf("msg_forged_%d", i))
		req.Header.Set("webhook-timestamp", strconv.FormatInt(time.Now().Unix(), 10))
		req.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32)))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a forged request was answered %d, want 401", resp.StatusCode)
		}
	}
	refused := sinks.waitFor("source.auth_failures", notify.Opened)
	if refused.Counts["refused"] != 50 {
		t.Errorf("auth_failures counts %v, want 50 refused", refused.Counts)
	}
	if st, err := send(t.Context(), client, signer(t), p.addr, "evt_at_last"); err != nil || st != http.StatusAccepted {
		t.Fatalf("send: %d %v", st, err)
	}
	sinks.waitFor("source.silent", notify.Resolved)
	// A second after its last event the source is silent again.
	sinks.checkOnceThen("source.silent opened", "source.silent opened", "source.auth_failures opened", "source.silent resolved")
}
