package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// issueAlerts is the alerts section as the docs write it.
const issueAlerts = `
alerts:
  repeat: 4h
  channels:
    - name: ops-hook
      type: webhook
      url: https://ops.example.com/hookgate
      secret: env:OPS_WEBHOOK_SECRET
    - name: ops-slack
      type: slack
      url: env:SLACK_WEBHOOK_URL
    - name: oncall
      type: email
      smtp: smtp://alerts@mail.example.com:587
      password: env:SMTP_PASSWORD
      from: hookgate@example.com
      to: [oncall@example.com]
      kinds: [destination.failing, events.dead]
sources:
  - name: shop
    provider: shopify
    secret: env:SHOPIFY_SECRET
    expect_every: 1h
`

func TestParseAlerts(t *testing.T) {
	t.Parallel()
	cfg, err := parse([]byte(issueAlerts), "", lookupTestEnv)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Alerts
	if a.Repeat != Duration(4*time.Hour) || a.CheckEvery != DefaultAlertCheckEvery || a.AuthFailures != DefaultAlertAuthFailures {
		t.Errorf("alerts = %+v, want repeat 4h and the other defaults", a)
	}
	if len(a.Channels) != 3 {
		t.Fatalf("channels = %d, want 3", len(a.Channels))
	}
	if got := a.Channels[1].URL.Value(); got != testEnv["SLACK_WEBHOOK_URL"] {
		t.Errorf("slack url = %q, want the environment's", got)
	}
	if a.Channels[2].Password.Value() != testEnv["SMTP_PASSWORD"] {
		t.Error("smtp password not read from the environment")
	}
	if !a.Channels[2].Wants(KindEventsDead) || a.Channels[2].Wants(KindSourceSilent) || !a.Channels[0].Wants(KindSourceSilent) {
		t.Error("kinds: oncall wants only its two, the others every kind")
	}
	if cfg.Sources[0].ExpectEvery != Duration(time.Hour) {
		t.Errorf("expect_every = %v, want 1h", cfg.Sources[0].ExpectEvery)
	}
	out, err := cfg.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{testEnv["SLACK_WEBHOOK_URL"], testEnv["SMTP_PASSWORD"], testEnv["OPS_WEBHOOK_SECRET"]} {
		if strings.Contains(string(out), secret) {
			t.Errorf("Redacted shows a secret:\n%s", out)
		}
	}
}

func TestAlertErrors(t *testing.T) {
	t.Parallel()
	channel := func(fields string) string { return "alerts:\n  channels:\n    - name: c\n" + fields }
	tests := []struct{ name, yaml, want string }{
		{"unknown type", channel("      type: pager\n"), `alerts.channels[0].type: "pager": want webhook, slack or email`},
		{"slack url written out", channel("      type: slack\n      url: https://hooks.slack.com/services/T0/B0/x\n"),
			"alerts.channels[0].url: write Slack's incoming-webhook URL as a reference"},
		{"webhook without url", channel("      type: webhook\n"), "alerts.channels[0].url: required for a webhook channel"},
		{"email password in url", channel("      type: email\n      smtp: smtp://u:p@mail:587\n      from: a@example.com\n      to: [b@example.com]\n"),
			"alerts.channels[0].smtp: the URL holds a password"},
		{"email bad to", channel("      type: email\n      smtp: smtp://127.0.0.1:25\n      from: a@example.com\n      to: [nobody]\n"),
			`alerts.channels[0].to[0]: "nobody": want an e-mail address`},
		{"email without smtp", channel("      type: email\n      from: a@example.com\n      to: [b@example.com]\n"), "alerts.channels[0].smtp: required"},
		{"unknown kind", channel("      type: webhook\n      url: https://ops.example.com/h\n      kinds: [destination.down]\n"),
			`alerts.channels[0].kinds[0]: "destination.down": want one of destination.failing`},
		{"two channels one name", "alerts:\n  channels:\n    - {name: c, type: webhook, url: https://a.example.com/}\n    - {name: c, type: webhook, url: https://b.example.com/}\n",
			`alerts.channels[1].name: "c": another channel has this name`},
		{"zero repeat", "alerts:\n  repeat: 0s\n", "alerts.repeat: 0s: must be positive"},
		{"misspelt key", "alerts:\n  reapeat: 1h\n", "alerts.reapeat: unknown field; did you mean repeat?"},
		{"negative expect_every", "sources:\n  - {name: s, provider: github, secret: env:GITHUB_SECRET, expect_every: -1h}\n",
			"sources[0].expect_every: -1h: want how long the source may stay quiet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse([]byte(tt.yaml), "", lookupTestEnv)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hooks.slack.com") {
				t.Errorf("the error shows the Slack URL: %v", err)
			}
		})
	}
}
