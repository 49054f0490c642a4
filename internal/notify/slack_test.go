package notify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/notify"
)

// secretPath is the part of an incoming webhook's URL that lets anyone
// post to the channel.
const secretPath = "/services/T000/B000/XXXXsecretXXXX"

type slackRequest struct {
	method, path, contentType string
	body                      []byte
}

// slackServer answers every request with code and answer, and hands each
// request it got to the returned channel.
func slackServer(t *testing.T, code int, answer string) (*httptest.Server, chan slackRequest) {
	t.Helper()
	got := make(chan slackRequest, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		got <- slackRequest{r.Method, r.URL.Path, r.Header.Get("Content-Type"), body}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func slackClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

type slackPayload struct {
	Text   string `json:"text"`
	Blocks []struct {
		Type string `json:"type"`
		Text *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
		Fields []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"fields"`
		Elements []struct {
			Type string `json:"type"`
			Text any    `json:"text"`
			URL  string `json:"url"`
		} `json:"elements"`
	} `json:"blocks"`
}

// The message Slack gets: the words as text (what a notification shows),
// a header, the words, the fields, the time, and a button to the console;
// its JSON is pinned in testdata/slack.
func TestSlackMessage(t *testing.T) {
	srv, got := slackServer(t, http.StatusOK, "ok")
	m := sample("destination.failing", notify.Opened)
	s := notify.Slack{URL: srv.URL + secretPath, Client: slackClient(t)}
	if err := s.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	req := <-got
	if req.method != http.MethodPost || req.path != secretPath || req.contentType != "application/json" {
		t.Errorf("got %s %s (%s)", req.method, req.path, req.contentType)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, req.body, "", "  "); err != nil {
		t.Fatal(err)
	}
	golden(t, "slack/destination.failing.opened.json", append(indented.Bytes(), '\n'))

	var p slackPayload
	if err := json.Unmarshal(req.body, &p); err != nil {
		t.Fatal(err)
	}
	subject, body := notify.Text(m)
	if p.Text != subject+"\n"+body {
		t.Errorf("text %q", p.Text)
	}
	var types []string
	for _, b := range p.Blocks {
		types = append(types, b.Type)
	}
	if strings.Join(types, " ") != "header section context actions" {
		t.Fatalf("blocks %v", types)
	}
	if h := p.Blocks[0].Text; h == nil || h.Type != "plain_text" || h.Text != subject {
		t.Errorf("header %+v", h)
	}
	sec := p.Blocks[1]
	if sec.Text == nil || sec.Text.Text != body {
		t.Errorf("section text %+v", sec.Text)
	}
	var fields []string
	for _, f := range sec.Fields {
		fields = append(fields, f.Text)
	}
	want := []string{"*Source*\nshop", "*Destination*\ncrm", "*Failed attempts*\n12", "*Pending*\n1,204"}
	if strings.Join(fields, "|") != strings.Join(want, "|") {
		t.Errorf("fields %q, want %q", fields, want)
	}
	if ctx := p.Blocks[2].Elements; len(ctx) != 1 || !strings.Contains(ctx[0].Text.(string), "2025-03-14 10:04:05 UTC") {
		t.Errorf("context %+v", ctx)
	}
	if act := p.Blocks[3].Elements; len(act) != 1 || act[0].Type != "button" || act[0].URL != m.ConsoleURL {
		t.Errorf("actions %+v", act)
	}
}

// Without a console URL there is no button; text Slack would read as
// markup (<, >, &) is escaped.
func TestSlackWithoutConsole(t *testing.T) {
	srv, got := slackServer(t, http.StatusOK, "ok")
	m := sample("store.unavailable", notify.Opened)
	m.ConsoleURL = ""
	m.LastError = "<html> & more"
	_, m.Summary = notify.Text(m)
	if err := (notify.Slack{URL: srv.URL, Client: slackClient(t)}).Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	var p slackPayload
	if err := json.Unmarshal((<-got).body, &p); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Blocks {
		if b.Type == "actions" {
			t.Errorf("an actions block without a console URL: %+v", b)
		}
	}
	if body := p.Blocks[1].Text.Text; !strings.Contains(body, "&lt;html&gt; &amp; more") {
		t.Errorf("section text not escaped: %q", body)
	}
}

// Slack's refusal is an error naming the status and the start of its
// answer, never the URL, whose path is the secret.
func TestSlackRefused(t *testing.T) {
	srv, _ := slackServer(t, http.StatusInternalServerError, "internal_error "+strings.Repeat("x", 1<<20))
	err := notify.Slack{URL: srv.URL + secretPath, Client: slackClient(t)}.Send(context.Background(), sample("events.dead", notify.Opened))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "500") || !strings.Contains(msg, "internal_error") {
		t.Errorf("error does not say what Slack answered: %s", msg)
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("error shows the URL: %s", msg)
	}
	if len(msg) > 1024 {
		t.Errorf("error quotes %d bytes of the answer", len(msg))
	}
}

// A Slack that cannot be reached is an error without the URL either.
func TestSlackUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + secretPath + "?token=secret"
	srv.Close()
	err := notify.Slack{URL: url, Client: slackClient(t)}.Send(context.Background(), sample("events.dead", notify.Opened))
	if err == nil {
		t.Fatal("no error")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error shows the URL: %v", err)
	}
}

// A Slack that never answers holds Send only until the context's
// deadline.
func TestSlackHangs(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := notify.Slack{URL: srv.URL + secretPath, Client: slackClient(t)}.Send(ctx, sample("events.dead", notify.Opened))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want a deadline error", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error shows the URL: %v", err)
	}
}

// A Slack without a client of its own uses one that gives up in time and
// does not follow a redirect, which would post the message elsewhere.
func TestSlackDefaultClient(t *testing.T) {
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	elsewhere, got := slackServer(t, http.StatusOK, "ok")
	srv := httptest.NewServer(http.RedirectHandler(elsewhere.URL, http.StatusTemporaryRedirect))
	t.Cleanup(srv.Close)
	err := notify.Slack{URL: srv.URL + secretPath}.Send(context.Background(), sample("events.dead", notify.Opened))
	if err == nil || !strings.Contains(err.Error(), "307") {
		t.Errorf("got %v, want an error naming 307", err)
	}
	select {
	case r := <-got:
		t.Errorf("the redirect was followed: %s %s", r.method, r.path)
	default:
	}
}
