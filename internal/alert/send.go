package alert

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/notify"
)

const (
	// sendBatch is how many notices one look leases.
	sendBatch = 16
	// sendLease is how long a node holds a notice it sends: longer than
	// sendTimeout, so that no two nodes send one notice at once.
	sendLease   = time.Minute
	sendTimeout = 20 * time.Second
	// maxSends is how many times a notice is tried before it is given up
	// (logged and counted): with the backoff below, about a day.
	maxSends = 16
	// sendBackoff doubles from its first value up to its last.
	sendBackoffFirst = 10 * time.Second
	sendBackoffMax   = 2 * time.Hour
	// alertWindow is how long the key of a webhook notice is kept: a
	// notice is tried for about a day.
	alertWindow = 7 * 24 * time.Hour
)

// notices returns the notices of a change: one per Slack or e-mail
// channel that wants the incident's kind, and one event for the webhook
// channels when any wants it.
func (e *Engine) notices(change notify.Change) inbox.NoticeFunc {
	return func(inc inbox.Incident) []inbox.Notice {
		body, err := json.Marshal(e.message(inc, change))
		if err != nil {
			e.log.Error("alerts: encoding a message", "err", err)
			return nil
		}
		var out []inbox.Notice
		webhook := false
		for _, c := range e.opts.Alerts.Channels {
			if !c.Wants(inc.Kind) {
				continue
			}
			if c.Type == config.ChannelWebhook {
				webhook = true
				continue
			}
			out = append(out, inbox.Notice{Change: string(change), Channel: c.Name, Body: body})
		}
		if webhook {
			out = append(out, inbox.Notice{Change: string(change), Channel: webhookChannel, Body: body})
		}
		return out
	}
}

// message is the message of a change of inc.
func (e *Engine) message(inc inbox.Incident, change notify.Change) notify.Message {
	m := notify.Message{Type: inc.Kind, Change: change, Incident: strconv.FormatInt(inc.ID, 10),
		OpenedAt: inc.OpenedAt.UTC(), Source: inc.Source, Destination: inc.Destination,
		LastError: inc.LastError, ConsoleURL: e.opts.Alerts.ConsoleURL}
	m.Counts = Counts(inc.Counts)
	if !inc.Open() {
		at := inc.ResolvedAt.UTC()
		m.ResolvedAt = &at
		if inc.Kind == config.KindDestinationFailing {
			m.Type = config.KindDestinationRecovered
		}
	}
	_, m.Summary = notify.Text(m)
	return m
}

// Counts are the counts of an incident that say something to a reader:
// c without those the engine keeps for its arithmetic; nil when none.
func Counts(c map[string]int64) map[string]int64 {
	var out map[string]int64
	for k, v := range c {
		if slices.Contains(internalCounts, k) {
			continue
		}
		if out == nil {
			out = map[string]int64{}
		}
		out[k] = v
	}
	return out
}

// sendLoop sends the queued notices, looking every SendEvery and when a
// check queued some, until ctx ends.
func (e *Engine) sendLoop(ctx context.Context) {
	tick := time.NewTicker(e.opts.SendEvery)
	defer tick.Stop()
	for {
		for e.sendDue(ctx) == sendBatch && ctx.Err() == nil {
			// A full batch: more may be due.
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-e.wake:
		}
	}
}

// sendDue sends the notices due now and returns how many it leased.
func (e *Engine) sendDue(ctx context.Context) int {
	due, err := e.opts.Incidents.LeaseNotices(ctx, e.opts.Owner, sendBatch, e.now(), sendLease)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("alerts: leasing notices", "err", err)
		}
		return 0
	}
	for _, n := range due {
		err := e.send(ctx, n)
		if ctx.Err() != nil {
			// Shutting down: the lease runs out and another node, or
			// this one after its restart, sends it.
			return 0
		}
		var retry time.Time
		var errText string
		result := "sent"
		if err != nil {
			errText = redact(err.Error())
			result = "failed"
			if n.Attempts+1 < maxSends {
				retry = e.now().Add(backoff(n.Attempts + 1))
				result = "retry"
			}
			e.log.Warn("alerts: a notification was not sent", "channel", n.Channel, "incident", n.IncidentID,
				"attempt", n.Attempts+1, "retry_at", retry, "err", errText)
		}
		e.sent.WithLabelValues(n.Channel, result).Inc()
		if err := e.opts.Incidents.FinishNotice(ctx, e.opts.Owner, n.ID, err == nil, errText, retry); err != nil && ctx.Err() == nil {
			e.log.Error("alerts: recording a notification", "channel", n.Channel, "err", err)
		}
	}
	return len(due)
}

// backoff is the wait before a notice's next try after its nth.
func backoff(n int) time.Duration {
	d := sendBackoffFirst
	for range n - 1 {
		d *= 2
		if d >= sendBackoffMax {
			return sendBackoffMax
		}
	}
	return d
}

// send sends one notice on its channel.
func (e *Engine) send(ctx context.Context, n inbox.Notice) error {
	if n.Channel == webhookChannel {
		return e.enqueue(ctx, n)
	}
	s, ok := e.opts.Senders[n.Channel]
	if !ok {
		return errors.New("channel " + strconv.Quote(n.Channel) + " is no longer configured")
	}
	var m notify.Message
	if err := json.Unmarshal(n.Body, &m); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	return s.Send(ctx, m)
}

// enqueue offers a webhook notice to the inbox as an event of Source,
// keyed by the notice: a notice sent twice (its lease ran out in between)
// is a duplicate there, delivered once.
func (e *Engine) enqueue(ctx context.Context, n inbox.Notice) error {
	var m notify.Message
	if err := json.Unmarshal(n.Body, &m); err != nil {
		return err
	}
	id := "notice_" + strconv.FormatInt(n.ID, 10)
	k := dedupe.Key{Provider: Source, ObjectType: "incident", Action: m.Type, EventID: id}
	ev := inbox.Event{Hash: k.Hash(), Scope: k.Scope(), Source: Source, Provider: Source, EventID: id,
		Type: m.Type, EntityType: "incident", EntityID: m.Incident, Payload: n.Body,
		Headers: map[string]string{"Content-Type": "application/json"}, ReceivedAt: e.now()}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	_, err := e.opts.Store.Accept(ctx, []inbox.Item{{Event: ev, Window: alertWindow}})
	return err
}

// direct sends m on every Slack and e-mail channel that wants it, now,
// without the store: for the store's own outage.
func (e *Engine) direct(ctx context.Context, m notify.Message) {
	_, m.Summary = notify.Text(m)
	for _, c := range e.opts.Alerts.Channels {
		s, ok := e.opts.Senders[c.Name]
		if !ok || !c.Wants(m.Type) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, sendTimeout)
		err := s.Send(sctx, m)
		cancel()
		result := "sent"
		if err != nil {
			result = "failed"
			e.log.Warn("alerts: a notification was not sent", "channel", c.Name, "kind", m.Type, "err", redact(err.Error()))
		}
		e.sent.WithLabelValues(c.Name, result).Inc()
	}
}
