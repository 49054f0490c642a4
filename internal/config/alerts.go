package config

import (
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Alerting defaults.
const (
	// DefaultAlertRepeat is how often an open incident is notified again.
	DefaultAlertRepeat = Duration(4 * time.Hour)
	// DefaultAlertCheckEvery is how often the conditions are checked.
	DefaultAlertCheckEvery = Duration(30 * time.Second)
	// DefaultAlertFailedAttempts is how many failed attempts in a row to a
	// destination open destination.failing (its circuit opening does too).
	DefaultAlertFailedAttempts = DefaultPauseAfter
	// DefaultAlertAuthFailures is how many refused requests of a source
	// within alerts.auth_window open source.auth_failures.
	DefaultAlertAuthFailures = 50
	// DefaultAlertAuthWindow is the window auth_failures counts in.
	DefaultAlertAuthWindow = Duration(time.Minute)
	// DefaultAlertLag is how old the oldest pending event may grow before
	// processing.lag opens.
	DefaultAlertLag = Duration(15 * time.Minute)
)

// The alert channel types.
const (
	ChannelWebhook = "webhook"
	ChannelSlack   = "slack"
	ChannelEmail   = "email"
)

// The incident kinds, as channels' kinds: name them.
const (
	KindDestinationFailing = "destination.failing"
	KindEventsDead         = "events.dead"
	KindSourceSilent       = "source.silent"
	KindSourceAuthFailures = "source.auth_failures"
	KindProcessingLag      = "processing.lag"
	KindStoreUnavailable   = "store.unavailable"
	KindSpoolWaiting       = "spool.waiting"
	KindSpoolQuarantined   = "spool.quarantined"
	// KindReconcileGap: a source's last reconciliation run recovered
	// events whose webhook never came, or failed.
	KindReconcileGap = "reconcile.gap"
)

// KindDestinationRecovered is the type of the message that resolves a
// destination.failing incident.
const KindDestinationRecovered = "destination.recovered"

// AlertSource is the internal source whose events are the webhook alert
// channels' notifications; a configured source may not take its name.
const AlertSource = "hookgate-alerts"

// IncidentKinds are the kinds of incident, in the order docs list them.
var IncidentKinds = []string{
	KindDestinationFailing, KindEventsDead, KindSourceSilent, KindSourceAuthFailures,
	KindProcessingLag, KindStoreUnavailable, KindSpoolWaiting, KindSpoolQuarantined, KindReconcileGap,
}

// Alerts is the alerts section: when incidents open and where their
// notifications go.
type Alerts struct {
	// Repeat is how often an open incident is notified again;
	// [DefaultAlertRepeat] when absent.
	Repeat Duration `yaml:"repeat"`
	// CheckEvery is how often each node checks the conditions;
	// [DefaultAlertCheckEvery] when absent.
	CheckEvery Duration `yaml:"check_every"`
	// ConsoleURL is the console's address as its readers reach it
	// (https://hookgate.example.com/ui/): messages link to it when set.
	ConsoleURL string `yaml:"console_url,omitempty"`
	// FailedAttempts opens destination.failing after that many failed
	// attempts in a row; [DefaultAlertFailedAttempts] when absent.
	FailedAttempts int `yaml:"failed_attempts"`
	// AuthFailures opens source.auth_failures when a node refuses that
	// many requests of a source within AuthWindow.
	AuthFailures int      `yaml:"auth_failures"`
	AuthWindow   Duration `yaml:"auth_window"`
	// Lag opens processing.lag when the oldest pending event is older.
	Lag Duration `yaml:"lag"`
	// Channels are where notifications go; none: incidents are kept and
	// shown, and notified nowhere.
	Channels []AlertChannel `yaml:"channels,omitempty"`
}

// AlertChannel is one place notifications go.
type AlertChannel struct {
	// Name names the channel in logs, metrics and the console.
	Name string `yaml:"name"`
	// Type is webhook, slack or email.
	Type string `yaml:"type"`
	// URL is the webhook's endpoint, or Slack's incoming-webhook URL
	// (itself a secret: write it as a reference).
	URL HeaderValue `yaml:"url,omitempty"`
	// Secret signs a webhook channel's requests (Standard Webhooks).
	Secret Secret `yaml:"secret,omitempty"`
	// SMTP is the e-mail relay: smtp://[user@]host[:port] (STARTTLS when
	// offered, required with a password) or smtps://host[:port].
	SMTP     string   `yaml:"smtp,omitempty"`
	Password Secret   `yaml:"password,omitempty"`
	From     string   `yaml:"from,omitempty"`
	To       []string `yaml:"to,omitempty,flow"`
	// Kinds limits the channel to those incident kinds; empty: all.
	Kinds []string `yaml:"kinds,omitempty,flow"`
}

// Wants reports whether the channel is notified of incidents of kind.
func (c AlertChannel) Wants(kind string) bool {
	return len(c.Kinds) == 0 || slices.Contains(c.Kinds, kind)
}

func defaultAlerts() Alerts {
	return Alerts{Repeat: DefaultAlertRepeat, CheckEvery: DefaultAlertCheckEvery,
		FailedAttempts: DefaultAlertFailedAttempts, AuthFailures: DefaultAlertAuthFailures,
		AuthWindow: DefaultAlertAuthWindow, Lag: DefaultAlertLag}
}

// check validates the section; add reports each problem.
func (a Alerts) check(add func(field, format string, args ...any)) {
	for _, d := range []struct {
		field string
		v     Duration
	}{{"alerts.repeat", a.Repeat}, {"alerts.check_every", a.CheckEvery}, {"alerts.auth_window", a.AuthWindow}, {"alerts.lag", a.Lag}} {
		if d.v <= 0 {
			add(d.field, "%s: must be positive", d.v)
		}
	}
	if a.FailedAttempts < 1 {
		add("alerts.failed_attempts", "%d: want at least 1", a.FailedAttempts)
	}
	if a.AuthFailures < 1 {
		add("alerts.auth_failures", "%d: want at least 1", a.AuthFailures)
	}
	if a.ConsoleURL != "" {
		if u, err := url.Parse(a.ConsoleURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("alerts.console_url", "%q: want the console's http(s) address, e.g. https://hookgate.example.com/ui/", a.ConsoleURL)
		}
	}
	seen := map[string]bool{}
	for i, c := range a.Channels {
		path := fmt.Sprintf("alerts.channels[%d]", i)
		switch {
		case strings.TrimSpace(c.Name) == "":
			add(path+".name", "required: the channel's name, for logs and metrics")
		case !sourceName.MatchString(c.Name):
			add(path+".name", "%q: want lower-case letters, digits, '_' and '-'", c.Name)
		case seen[c.Name]:
			add(path+".name", "%q: another channel has this name", c.Name)
		}
		seen[c.Name] = true
		for j, k := range c.Kinds {
			if !slices.Contains(IncidentKinds, k) {
				add(fmt.Sprintf("%s.kinds[%d]", path, j), "%q: want one of %s", k, strings.Join(IncidentKinds, ", "))
			}
		}
		c.checkType(path, add)
	}
}

// checkType checks the fields of the channel's type, and that it sets
// none of another type's.
func (c AlertChannel) checkType(path string, add func(field, format string, args ...any)) {
	httpURL := func(what string) {
		u, err := url.Parse(c.URL.Value())
		switch {
		case c.URL.Value() == "":
			add(path+".url", "required for a %s channel: %s", c.Type, what)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			// The value is not shown: a Slack URL is a credential.
			add(path+".url", "want an http(s) URL: %s", what)
		}
	}
	unused := func(field string, set bool) {
		if set {
			add(path+"."+field, "not used by a %s channel", c.Type)
		}
	}
	switch c.Type {
	case ChannelWebhook:
		httpURL("the endpoint that receives the operational webhooks")
		if v := c.Secret.Value(); v != "" && !validWebhookSecret(v) {
			add(path+".secret", "%w: want a Standard Webhooks secret, whsec_ and base64 (the value is not shown)", ErrSecret)
		}
		unused("smtp", c.SMTP != "")
		unused("password", !c.Password.IsZero())
	case ChannelSlack:
		// The URL is a secret, read by reference: its value is checked
		// when a message is sent (an error that does not show it), so a
		// configuration checked away from its secrets still validates.
		if c.URL.Value() == "" {
			add(path+".url", "required for a slack channel: Slack's incoming-webhook URL, as a reference (env:SLACK_WEBHOOK_URL)")
		} else if c.URL.Ref() == "" {
			add(path+".url", "write Slack's incoming-webhook URL as a reference (env:NAME or file:PATH): the URL is itself a secret")
		}
		unused("secret", !c.Secret.IsZero())
		unused("smtp", c.SMTP != "")
		unused("password", !c.Password.IsZero())
	case ChannelEmail:
		u, err := url.Parse(c.SMTP)
		switch {
		case c.SMTP == "":
			add(path+".smtp", "required for an email channel: smtp://user@host:587, smtps://host:465, or smtp://127.0.0.1:25 for a local relay")
		case err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "":
			add(path+".smtp", "want smtp://[user@]host[:port] or smtps://host[:port]")
		case u.User != nil && hasPassword(u):
			add(path+".smtp", "the URL holds a password: put it in password, as a reference (env:SMTP_PASSWORD)")
		}
		if _, err := mail.ParseAddress(c.From); err != nil {
			add(path+".from", "%q: want an e-mail address", c.From)
		}
		if len(c.To) == 0 {
			add(path+".to", "required: the addresses notifications go to")
		}
		for j, to := range c.To {
			if _, err := mail.ParseAddress(to); err != nil {
				add(fmt.Sprintf("%s.to[%d]", path, j), "%q: want an e-mail address", to)
			}
		}
		unused("url", c.URL.Value() != "")
		unused("secret", !c.Secret.IsZero())
	default:
		add(path+".type", "%q: want webhook, slack or email", c.Type)
	}
}

func hasPassword(u *url.URL) bool {
	_, ok := u.User.Password()
	return ok
}
