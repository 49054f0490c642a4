// Package natsjstest gives each test a JetStream stream of its own on the
// NATS server named by HOOKGATE_TEST_NATS (default: the local server).
// When the server cannot be reached the test is skipped with a one-line
// reason, unless HOOKGATE_REQUIRE_SERVICES=1 (CI sets it), where it fails
// instead.
package natsjstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultURL is the server tests use when HOOKGATE_TEST_NATS is unset.
const DefaultURL = "nats://127.0.0.1:4222"

// URL is the URL of the test server.
func URL() string {
	if u := os.Getenv("HOOKGATE_TEST_NATS"); u != "" {
		return u
	}
	return DefaultURL
}

// Addr is the test server's host:port.
func Addr(t testing.TB) string {
	t.Helper()
	u, err := url.Parse(URL())
	if err != nil || u.Host == "" {
		t.Fatalf("HOOKGATE_TEST_NATS %q: want nats://host:port", URL())
	}
	return u.Host
}

// Unavailable skips t, or fails it when services are required
// (HOOKGATE_REQUIRE_SERVICES=1), saying why.
func Unavailable(t testing.TB, service string, err error) {
	t.Helper()
	if os.Getenv("HOOKGATE_REQUIRE_SERVICES") == "1" {
		t.Fatalf("%s unavailable and HOOKGATE_REQUIRE_SERVICES=1: %v", service, err)
	}
	t.Skipf("%s unavailable (set HOOKGATE_TEST_NATS or start nats-server -js): %v", service, err)
}

// Connect connects to the test server, or skips t (see Unavailable), and
// closes the connection when t ends.
func Connect(t testing.TB) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(URL(), nats.Name("hookgate-test"), nats.Timeout(5*time.Second))
	if err != nil {
		Unavailable(t, "NATS", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err != nil {
		Unavailable(t, "NATS JetStream", err)
	}
	return js
}

// Stream is a stream of a test's own.
type Stream struct {
	jetstream.Stream
	// Prefix is the first token of every subject the stream takes
	// (Prefix.>): hg and a random suffix.
	Prefix string
}

// NewStream creates a stream in memory for t that takes the subjects
// Prefix.> and drops a message whose Nats-Msg-Id it saw within window
// (0: the server's default, two minutes), and deletes it when t ends.
func NewStream(t testing.TB, js jetstream.JetStream, window time.Duration) *Stream {
	t.Helper()
	suffix := make([]byte, 6)
	rand.Read(suffix)
	prefix := "hg" + hex.EncodeToString(suffix)
	name := "HG" + hex.EncodeToString(suffix)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: name, Subjects: []string{prefix + ".>"}, Storage: jetstream.MemoryStorage, Duplicates: window,
	})
	if err != nil {
		t.Fatalf("create stream %s for %s.>: %v", name, prefix, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteStream(ctx, name); err != nil {
			t.Errorf("delete stream %s: %v", name, err)
		}
	})
	return &Stream{Stream: s, Prefix: prefix}
}

// Read returns every message the stream holds, in the order of their
// sequence numbers.
func (s *Stream) Read(ctx context.Context) ([]*jetstream.RawStreamMsg, error) {
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read seq %d: %w", seq, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// Count is how many messages the stream holds.
func (s *Stream) Count(ctx context.Context) (uint64, error) {
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}
