// Package delivertest is the conformance suite every kind of destination
// passes: a broker's sender delivers what it is given, once per message,
// under the message's id, fails retryably and within its time when the
// broker cannot be reached, and is safe for concurrent use.
package delivertest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/deliver"
)

// Received is a message as a consumer of the broker read it.
type Received struct {
	// ID is the message's id as the broker carries it (Nats-Msg-Id,
	// MessageId, the webhook-id header).
	ID      string
	Payload []byte
	// Source, Type and Tenant as the message's headers carry them.
	Source, Type, Tenant string
	// Where is the subject, routing key or topic it was published to.
	Where string
}

// Kind is one kind of destination under test.
type Kind struct {
	// Open returns a sender to a fresh place on the broker (a stream, an
	// exchange and queue, a topic) whose subject, routing key or topic is
	// "{source}.{type}", or whatever template the kind fills per event,
	// and read, which returns every message published there so far, in
	// the order the broker keeps them. Open registers its cleanup with t.
	Open func(t *testing.T) (send deliver.Sender, read func(ctx context.Context) ([]Received, error))
	// Unreachable returns a sender to a broker that does not answer (a
	// closed port), with a timeout of at most a few seconds.
	Unreachable func(t *testing.T) deliver.Sender
	// Where is what Received.Where must be for a message of source shop
	// and type orders.created.
	Where string
}

// Exercise runs the suite.
func Exercise(t *testing.T, k Kind) {
	t.Helper()
	t.Run("Delivers", func(t *testing.T) { t.Parallel(); delivers(t, k) })
	t.Run("ResendKeepsTheID", func(t *testing.T) { t.Parallel(); resendKeepsTheID(t, k) })
	t.Run("Concurrent", func(t *testing.T) { t.Parallel(); concurrent(t, k) })
	t.Run("Unreachable", func(t *testing.T) { t.Parallel(); unreachable(t, k) })
	t.Run("Cancelled", func(t *testing.T) { t.Parallel(); cancelled(t, k) })
}

// Message returns a message of source shop, tenant acme and type
// orders.created, with id and a JSON body naming it.
func Message(id string) deliver.Message {
	return deliver.Message{WebhookID: id, Payload: []byte(`{"id":"` + id + `"}`), ContentType: "application/json",
		Headers: map[string]string{"X-Hookgate-Source": "shop"}, Source: "shop", Tenant: "acme", Type: "orders.created",
		OrderKey: "acme/order/" + id}
}

// readUntil reads until cond holds of what was read, or fails t after
// 20 seconds.
func readUntil(t *testing.T, read func(ctx context.Context) ([]Received, error), cond func([]Received) bool) []Received {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := read(t.Context())
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("read %d messages in 20s, not what was sent: %+v", len(got), got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func delivers(t *testing.T, k Kind) {
	send, read := k.Open(t)
	m := Message("msg_delivers")
	out := send.Send(t.Context(), m)
	if !out.Delivered || out.Err != nil {
		t.Fatalf("Send = %+v, want delivered", out)
	}
	got := readUntil(t, read, func(r []Received) bool { return len(r) >= 1 })
	r := got[0]
	if len(got) != 1 || r.ID != m.WebhookID || !bytes.Equal(r.Payload, m.Payload) ||
		r.Source != "shop" || r.Type != "orders.created" || r.Tenant != "acme" || r.Where != k.Where {
		t.Errorf("read %+v, want one message %s from shop, type orders.created, tenant acme, at %s", got, m.WebhookID, k.Where)
	}
}

// A message sent again (its first attempt's outcome was lost) carries the
// same id, so that the broker's dedupe or the consumer can tell.
func resendKeepsTheID(t *testing.T, k Kind) {
	send, read := k.Open(t)
	m := Message("msg_twice")
	for range 2 {
		if out := send.Send(t.Context(), m); !out.Delivered {
			t.Fatalf("Send = %+v, want delivered", out)
		}
	}
	send.Send(t.Context(), Message("msg_after"))
	got := readUntil(t, read, func(r []Received) bool {
		return len(r) > 0 && r[len(r)-1].ID == "msg_after"
	})
	for _, r := range got[:len(got)-1] {
		if r.ID != m.WebhookID {
			t.Errorf("a resend read as %q, want %q", r.ID, m.WebhookID)
		}
	}
}

func concurrent(t *testing.T, k Kind) {
	send, read := k.Open(t)
	const n = 100
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if out := send.Send(t.Context(), Message(fmt.Sprintf("msg_%03d", i))); !out.Delivered {
				t.Errorf("Send %d = %+v, want delivered", i, out)
			}
		})
	}
	wg.Wait()
	got := readUntil(t, read, func(r []Received) bool { return len(r) >= n })
	seen := map[string]bool{}
	for _, r := range got {
		seen[r.ID] = true
	}
	if len(seen) != n {
		t.Errorf("read %d distinct ids of %d messages, want %d", len(seen), len(got), n)
	}
}

func unreachable(t *testing.T, k Kind) {
	send := k.Unreachable(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out := send.Send(ctx, Message("msg_nowhere"))
	if out.Delivered || !out.Retryable || out.Err == nil {
		t.Errorf("Send to a broker that does not answer = %+v, want a retryable failure", out)
	}
	if ctx.Err() != nil {
		t.Errorf("Send took the whole 30 s: its own timeout did not end it")
	}
}

func cancelled(t *testing.T, k Kind) {
	send, _ := k.Open(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	out := send.Send(ctx, Message("msg_cancelled"))
	if out.Delivered || out.Err == nil {
		t.Errorf("Send with a cancelled context = %+v, want not delivered", out)
	}
}
