package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/cli"
)

// TestListenFrom: --from places the start: after an event id, after the
// events received before a time (a duration ago), or at the first event
// (0); each forwards the events after it, in order, and nothing before.
// A --from given to a listen that has a cursor replaces it.
func TestListenFrom(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	d := newOpsDB(t, time.Now().Add(-3*time.Hour))
	old := d.accept("stripe", "acme", "old_1", "old_2")
	d.clock.Advance(150 * time.Minute)
	recent := d.accept("stripe", "acme", "recent_1", "recent_2")
	g := startGateway(t, "sqlite:"+d.path)
	a := newApp(t)

	var first string
	for _, c := range []struct {
		from string
		want []string
	}{
		{"1h", []string{"recent_1", "recent_2"}},
		{"2h30m1s", []string{"recent_1", "recent_2"}},
		{"4h", []string{"old_1", "old_2", "recent_1", "recent_2"}},
		{time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339), []string{"recent_1", "recent_2"}},
		{strconv.FormatInt(old[1], 10), []string{"recent_1", "recent_2"}},
		{strconv.FormatInt(recent[0], 10), []string{"recent_2"}},
		{"0", []string{"old_1", "old_2", "recent_1", "recent_2"}},
	} {
		cursor := filepath.Join(t.TempDir(), "cursor.json")
		if first == "" {
			first = cursor
		}
		l := startListen(t, t.TempDir(), nil, "--url", g.admin, "--token", listenToken, "--forward", a.url,
			"--from", c.from, "--cursor", cursor, "--interval", "50ms")
		for _, w := range c.want {
			if r := a.next(t); r.id() != w {
				t.Fatalf("--from %s: the app got %s, want %v in order", c.from, r.id(), c.want)
			}
		}
		// The markers of the cases before come next, then this case's.
		marker := "marker_" + c.from
		g.sendStripe(t, marker)
		for r := a.next(t); r.id() != marker; r = a.next(t) {
			if !strings.HasPrefix(r.id(), "marker_") {
				t.Fatalf("--from %s: the app got %s after %v, want the markers", c.from, r.id(), c.want)
			}
		}
		l.interrupt(t)
	}
	// The first case's cursor is past every marker; --from replaces it.
	l := startListen(t, t.TempDir(), nil, "--url", g.admin, "--token", listenToken, "--forward", a.url,
		"--from", strconv.FormatInt(recent[0], 10), "--cursor", first, "--interval", "50ms")
	if r := a.next(t); r.id() != "recent_2" {
		t.Errorf("--from %d on a cursor: the app got %s, want recent_2", recent[0], r.id())
	}
	l.interrupt(t)
}

// TestListenRaw: --raw forwards an event as the provider sent it: its
// body byte for byte and the headers the gateway kept (webhook-id and
// webhook-timestamp for Standard Webhooks), unsigned; --source keeps
// one source's events; --cursor puts the cursor, readable by its owner
// alone, where it says.
func TestListenRaw(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	g := startGateway(t, "")
	a := newApp(t)
	cursor := filepath.Join(t.TempDir(), "std.cursor")
	l := startListen(t, t.TempDir(), nil, "--url", g.admin, "--token", listenToken, "--forward", a.url,
		"--source", "std", "--raw", "--cursor", cursor, "--interval", "50ms")
	if l.secret != "" {
		t.Errorf("--raw printed a secret, %s: nothing is signed", l.secret)
	}
	g.sendStripe(t, "evt_other_source")
	body, id := g.sendStd(t, "msg_raw_1")
	r := a.next(t)
	if !bytes.Equal(r.body, body) || r.header.Get("Webhook-Id") != "msg_raw_1" || r.header.Get("Webhook-Timestamp") == "" ||
		r.header.Get("Webhook-Signature") != "" || r.header.Get("X-Hookgate-Source") != "" {
		t.Errorf("--raw: the app got %q with headers %v, want %q with the sender's webhook-id and timestamp, unsigned", r.body, r.header, body)
	}
	if gotID, typ, source, status, _ := l.line(t); gotID != id || typ != "-" || source != "std" || status != "200" {
		t.Errorf("line: %d %s %s %s, want %d - std 200", gotID, typ, source, status, id)
	}
	l.interrupt(t)
	info, err := os.Stat(cursor)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("--cursor %s: %v, mode %v; want a file only its owner reads", cursor, err, info.Mode())
	}
	var saved struct {
		Gateway, Source string
		From            int64
		Done            []int64
	}
	if err := json.Unmarshal([]byte(readText(t, cursor)), &saved); err != nil || saved.Gateway != g.admin || saved.Source != "std" ||
		(saved.From < id && !containsID(saved.Done, id)) {
		t.Errorf("cursor %s (%v): %+v, want it past event %d of std on %s", cursor, err, saved, id, g.admin)
	}
	// The cursor follows one gateway's source: another is refused.
	var out, stderr bytes.Buffer
	err = cli.Run(t.Context(), []string{"listen", "--url", g.admin, "--token", listenToken, "--forward", a.url, "--cursor", cursor}, nil, &out, &stderr)
	if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), `follows source "std"`) {
		t.Errorf("listen of every source on std's cursor: %v, want a usage error", err)
	}
}

func containsID(ids []int64, id int64) bool {
	for _, i := range ids {
		if i == id {
			return true
		}
	}
	return false
}

func TestListenHelp(t *testing.T) {
	t.Parallel()
	golden(t, "listen/help", runHelp(t, "listen", "--help"))
}

// TestListenRefused: a wrong token, or an address that is not the admin
// API, ends listen with exit status 1 and says what to fix, before it
// writes a cursor; a mistake on the command line is a usage error (exit
// status 2).
func TestListenRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	g := startGateway(t, "")
	a := newApp(t)
	run := func(args ...string) (string, error) {
		var out, stderr bytes.Buffer
		err := cli.Run(t.Context(), append([]string{"listen", "--forward", a.url, "--interval", "50ms"}, args...), nil, &out, &stderr)
		return out.String() + stderr.String(), err
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--url", g.admin, "--token", "wrong-token-wrong-token-wrong-token"},
			"refused the admin token (401 Unauthorized: invalid token): give the gateway's admin.token"},
		{[]string{"--url", g.intake, "--token", listenToken}, "answered 404 Not Found: is it the gateway's admin address?"},
	} {
		cursor := filepath.Join(t.TempDir(), "cursor.json")
		out, err := run(append(c.args, "--cursor", cursor)...)
		if err == nil || cli.ExitCode(err) != 1 || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("listen %v: %v\n%s\nwant exit status 1 and %q", c.args, err, out, c.msg)
		}
		if _, err := os.Stat(cursor); err == nil {
			t.Errorf("listen %v wrote a cursor", c.args)
		}
		if strings.Contains(out, listenToken) || err != nil && strings.Contains(err.Error(), listenToken) {
			t.Errorf("listen %v printed the token", c.args)
		}
	}

	noToken := writeText(t, "no-admin.yaml", "listen: 127.0.0.1:8080\ndatabase: sqlite:"+t.TempDir()+"/h.db\n")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--url", g.admin}, "listen: --url needs --token"},
		{[]string{"--config", noToken}, "has no admin.token: its admin API is off"},
		{[]string{"--url", "127.0.0.1:9090", "--token", listenToken}, `listen: --url "127.0.0.1:9090" is not an absolute http or https URL`},
		{[]string{"--url", g.admin, "--token", listenToken, "--from", "yesterday"}, `listen: --from "yesterday": want last, an event id, a time`},
		{[]string{"--url", g.admin, "--token", listenToken, "--interval", "0s"}, "listen: --interval must be positive"},
	} {
		out, err := run(c.args...)
		if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("listen %v: %v\n%s\nwant exit status 2 and %q", c.args, err, out, c.msg)
		}
	}
	var out, stderr bytes.Buffer
	err := cli.Run(t.Context(), []string{"listen", "--token", listenToken}, nil, &out, &stderr)
	if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "listen: give --forward") {
		t.Errorf("listen without --forward: %v, want a usage error", err)
	}
}

// TestListenGatewayDown: a gateway that does not answer is waited for,
// with a line that says so and when listen tries again; once it is up,
// its events are forwarded.
func TestListenGatewayDown(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	adminAddr := fmt.Sprintf("127.0.0.1:%d", closedPort(t))
	a := newApp(t)
	l := runListen(t, t.TempDir(), nil, "--url", "http://"+adminAddr, "--token", listenToken, "--forward", a.url, "--interval", "50ms")
	line := l.waitErr(t, "retrying in")
	if !strings.Contains(line, "the gateway at http://"+adminAddr+" did not answer") || !strings.Contains(line, "connection refused") {
		t.Errorf("retry line %q, want it to say the gateway did not answer", line)
	}
	l.waitErr(t, "retrying in")

	config := gatewayConfig(t, "sqlite:"+filepath.Join(t.TempDir(), "hookgate.db"), adminAddr, "file:"+writeText(t, "token", listenToken))
	g := &gateway{config: config, admin: "http://" + adminAddr, intake: startServe(t, "--config", config).addr}
	l.waitErr(t, "hookgate listen: ready")
	g.sendStripe(t, "evt_1")
	if r := a.next(t); r.id() != "evt_1" || r.code != http.StatusOK {
		t.Errorf("once the gateway was up the app got %s, want evt_1", r.id())
	}
	l.interrupt(t)
}
