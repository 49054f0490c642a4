package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultSlackTimeout bounds a Send to Slack whose context has no
// deadline, and the requests of the client a Slack without one uses.
const DefaultSlackTimeout = 10 * time.Second

// Limits of Slack's Block Kit, and how much of Slack's answer is read.
const (
	headerSize  = 150  // characters of a header block's text
	sectionSize = 3000 // characters of a section's text
	fieldSize   = 2000 // characters of one field
	maxFields   = 10   // fields of one section
	answerSize  = 256  // bytes of an answer quoted in an error
	drainSize   = 4 << 10
)

// defaultSlackClient is used by a Slack without a client. It does not
// follow redirects: Slack's webhooks do not redirect, and a redirect would
// post the message elsewhere.
var defaultSlackClient = &http.Client{
	Timeout: DefaultSlackTimeout,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// Slack posts messages to a Slack channel through an incoming webhook.
type Slack struct {
	// URL is the incoming webhook's URL. It is a secret (anyone who has it
	// can post to the channel): no error shows it.
	URL string
	// Client sends the request; nil means a client that gives up after
	// DefaultSlackTimeout and follows no redirect.
	Client *http.Client
}

// Send posts m: Text's words as the notification's text, and blocks that
// show them with a header, the source, destination and counts as fields,
// the times, and a button to ConsoleURL when it is set. An answer that is
// not 2xx is an error naming its status and the start of its body.
func (s Slack) Send(ctx context.Context, m Message) error {
	body, err := json.Marshal(slackMessage(m))
	if err != nil {
		return fmt.Errorf("slack: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultSlackTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("slack: %w", withoutURL(err))
	}
	req.Header.Set("Content-Type", "application/json")
	client := s.Client
	if client == nil {
		client = defaultSlackClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("slack: %w", withoutURL(err))
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainSize))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, answerSize))
	return fmt.Errorf("slack answered %s: %q", resp.Status, strings.ToValidUTF8(string(answer), "\uFFFD"))
}

// withoutURL drops the URL that net/http puts in its errors (as *url.Error
// or in a parse error's text), keeping what went wrong.
func withoutURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

// slackText is a Block Kit text object.
type slackText struct {
	Type string `json:"type"` // plain_text or mrkdwn
	Text string `json:"text"`
}

// slackBlock is a Block Kit block: a header, a section, a context or
// actions.
type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Fields   []slackText `json:"fields,omitempty"`
	Elements []any       `json:"elements,omitempty"`
}

type slackButton struct {
	Type string    `json:"type"`
	Text slackText `json:"text"`
	URL  string    `json:"url"`
}

type slackPayload struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

func slackMessage(m Message) slackPayload {
	subject, body := Text(m)
	section := slackBlock{Type: "section", Text: &slackText{"mrkdwn", cut(mrkdwn(body), sectionSize)}}
	for _, f := range fields(m) {
		if len(section.Fields) == maxFields {
			break
		}
		section.Fields = append(section.Fields, slackText{"mrkdwn", cut("*"+mrkdwn(f.Label)+"*\n"+mrkdwn(f.Value), fieldSize)})
	}
	p := slackPayload{
		Text: mrkdwn(subject + "\n" + body),
		Blocks: []slackBlock{
			{Type: "header", Text: &slackText{"plain_text", cut(subject, headerSize)}},
			section,
			{Type: "context", Elements: []any{slackText{"mrkdwn", mrkdwn(when(m) + " · incident " + m.Incident)}}},
		},
	}
	if m.ConsoleURL != "" {
		p.Blocks = append(p.Blocks, slackBlock{Type: "actions", Elements: []any{
			slackButton{Type: "button", Text: slackText{"plain_text", "Open in the console"}, URL: m.ConsoleURL},
		}})
	}
	return p
}

// mrkdwn escapes the three characters Slack reads as markup.
func mrkdwn(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// cut shortens s to n characters, the last of them an ellipsis.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
