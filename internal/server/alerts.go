package server

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hookgate/hookgate/internal/alert"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/notify"
	"github.com/hookgate/hookgate/internal/worker"
	"github.com/hookgate/hookgate/verify"
)

// openAlerts builds the alert engine when the store keeps incidents.
func (s *Server) openAlerts(cfg config.Config, opts Options) error {
	inc, ok := s.store.(inbox.Incidents)
	if !ok {
		return nil
	}
	senders := map[string]alert.Sender{}
	for _, c := range cfg.Alerts.Channels {
		switch c.Type {
		case config.ChannelSlack:
			senders[c.Name] = notify.Slack{URL: c.URL.Value()}
		case config.ChannelEmail:
			e, err := notify.NewEmail(notify.Email{URL: c.SMTP, Password: c.Password.Value(), From: c.From, To: c.To})
			if err != nil {
				return fmt.Errorf("alerts.channels %s: %w", c.Name, err)
			}
			senders[c.Name] = e
		}
	}
	local := alert.Local{Refused: s.metrics.Refused}
	if s.spool != nil {
		local.Spool = func() (int, int) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			st, err := s.spool.Stats(ctx)
			if err != nil {
				return 0, 0
			}
			return int(st.Waiting), int(st.Quarantined)
		}
	}
	host, _ := os.Hostname()
	e, err := alert.New(alert.Options{Store: s.store, Incidents: inc, Alerts: cfg.Alerts, Sources: cfg.Sources,
		Senders: senders, Local: local, Registry: s.metrics.Registry, Logger: s.log, Now: opts.Now,
		Owner: host + "/" + strconv.Itoa(os.Getpid()), SendEvery: opts.AlertSendEvery})
	if err != nil {
		return err
	}
	s.alerts = e
	return nil
}

// alertSource is the worker's source of the webhook alert channels: each
// channel a destination, taking the kinds it asked for.
func alertSource(cfg config.Config, opts Options) (worker.Source, bool, error) {
	ws := worker.Source{Name: alert.Source}
	for _, c := range cfg.Alerts.Channels {
		if c.Type != config.ChannelWebhook {
			continue
		}
		dc := config.Destination{Name: c.Name, URL: c.URL.Value()}.WithDefaults()
		d := worker.Destination{
			Destination:   deliver.Destination{Name: c.Name, URL: dc.URL, Timeout: time.Duration(dc.Timeout)},
			On:            config.OnAll,
			Types:         alertTypes(c.Kinds),
			MaxAttempts:   dc.MaxAttempts,
			RetryInitial:  time.Duration(dc.RetryInitial),
			RetryMaxDelay: time.Duration(dc.RetryMaxDelay),
			MaxInFlight:   dc.MaxInFlight,
			PauseAfter:    dc.PauseAfter,
			PauseFor:      time.Duration(dc.PauseFor),
		}
		if opts.BackoffBase > 0 {
			d.RetryInitial = opts.BackoffBase
		}
		if opts.BackoffMax > 0 {
			d.RetryMaxDelay = opts.BackoffMax
		}
		if secret := c.Secret.Value(); secret != "" {
			signer, err := verify.NewStandard(secret)
			if err != nil {
				return ws, false, fmt.Errorf("alerts.channels %s: %w", c.Name, err)
			}
			d.Signer = signer
		}
		ws.Destinations = append(ws.Destinations, d)
	}
	return ws, len(ws.Destinations) > 0, nil
}

// alertTypes are the event types a webhook channel of kinds takes: the
// kinds, and destination.recovered with destination.failing. Nil: all.
func alertTypes(kinds []string) []string {
	if len(kinds) == 0 {
		return nil
	}
	out := append([]string(nil), kinds...)
	for _, k := range kinds {
		if k == config.KindDestinationFailing {
			out = append(out, config.KindDestinationRecovered)
		}
	}
	return out
}
