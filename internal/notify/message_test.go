package notify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/notify"
)

// Every kind and change reads as pinned in testdata/text: the subject, a
// blank line, the body.
func TestTextGolden(t *testing.T) {
	for _, kind := range kinds {
		for _, change := range changes {
			m := sample(kind, change)
			t.Run(m.Type+"/"+string(change), func(t *testing.T) {
				subject, body := notify.Text(m)
				golden(t, "text/"+m.Type+"/"+string(change)+".golden", []byte(subject+"\n\n"+body+"\n"))
			})
		}
	}
}

func TestTextWords(t *testing.T) {
	at := func(d time.Duration) *time.Time {
		r := openedAt.Add(d)
		return &r
	}
	cases := []struct {
		name    string
		m       notify.Message
		subject string
		body    string
	}{
		{
			name: "failing once, one waiting, no error",
			m: notify.Message{Type: "destination.failing", Change: notify.Opened, OpenedAt: openedAt,
				Destination: "crm", Counts: map[string]int64{"failed_attempts": 1, "pending": 1}},
			subject: "[hookgate] destination.failing: crm",
			body:    "Delivery to crm has failed once since 10:04 UTC. 1 event is waiting.",
		},
		{
			name: "recovered after a day and more, nothing late",
			m: notify.Message{Type: "destination.recovered", Change: notify.Resolved, OpenedAt: openedAt,
				ResolvedAt: at(28*time.Hour + 59*time.Minute), Destination: "crm", Source: "shop"},
			subject: "[hookgate] destination.recovered: crm (source shop)",
			body:    "crm recovered after 1d4h.",
		},
		{
			name: "recovered within a minute",
			m: notify.Message{Type: "destination.recovered", Change: notify.Resolved, OpenedAt: openedAt,
				ResolvedAt: at(42*time.Second + 900*time.Millisecond), Destination: "crm",
				Counts: map[string]int64{"delivered_late": 1234567}},
			subject: "[hookgate] destination.recovered: crm",
			body:    "crm recovered after 42s: 1,234,567 events delivered late.",
		},
		{
			name: "whole hours and days",
			m: notify.Message{Type: "store.unavailable", Change: notify.Resolved, OpenedAt: openedAt,
				ResolvedAt: at(48 * time.Hour)},
			subject: "[hookgate] resolved: store.unavailable",
			body:    "The store is available again after 2d.",
		},
		{
			name: "a kind this version does not know says its summary",
			m: notify.Message{Type: "provider.gap", Change: notify.Opened, OpenedAt: openedAt,
				Source: "stripe", Summary: "Stripe lists 4 events that never arrived."},
			subject: "[hookgate] provider.gap: stripe",
			body:    "Stripe lists 4 events that never arrived.",
		},
		{
			name: "a kind this version does not know, without a summary",
			m: notify.Message{Type: "provider.gap", Change: notify.Resolved, OpenedAt: openedAt,
				ResolvedAt: at(3 * time.Minute)},
			subject: "[hookgate] resolved: provider.gap",
			body:    "provider.gap resolved after 3m.",
		},
		{
			name: "a last error on several lines reads as one",
			m: notify.Message{Type: "store.unavailable", Change: notify.Opened, OpenedAt: openedAt.In(time.FixedZone("CET", 3600)),
				LastError: "ping:\n\tconnection   reset"},
			subject: "[hookgate] store.unavailable",
			body:    "The store has been unavailable since 10:04 UTC: ping: connection reset. Senders are told to retry later (503), or their events are spooled where dedupe.on_store_error is spool.",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			subject, body := notify.Text(c.m)
			if subject != c.subject {
				t.Errorf("subject %q, want %q", subject, c.subject)
			}
			if body != c.body {
				t.Errorf("body %q, want %q", body, c.body)
			}
		})
	}
}

// A last error of any length is cut, so a destination that answers a page
// of HTML does not fill the message.
func TestTextCutsLongError(t *testing.T) {
	m := notify.Message{Type: "destination.failing", Change: notify.Opened, OpenedAt: openedAt,
		Destination: "crm", LastError: "500 " + strings.Repeat("é", 5000)}
	_, body := notify.Text(m)
	if n := len([]rune(body)); n > 400 {
		t.Errorf("body is %d characters: %q", n, body)
	}
	if !strings.Contains(body, "500 éé") || !strings.Contains(body, "…") {
		t.Errorf("body does not show the start of the error, cut: %q", body)
	}
}
