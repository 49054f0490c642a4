package cli_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookgate/hookgate/internal/admin"
	"github.com/hookgate/hookgate/internal/deliver/natsjs/natsjstest"
	"github.com/hookgate/hookgate/internal/eventview"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// natsToken is the admin API's token in the NATS test.
const natsToken = "nats-destination-admin-token-0123456789abcdef"

// natsInFlight is the destination's max_in_flight: at most this many
// attempts can lose their PubAck to one cut.
const natsInFlight = 4

// streamReader is a JetStream consumer of a stream: it counts the
// messages it reads by webhook-id, and acknowledges each.
type streamReader struct {
	mu   sync.Mutex
	seen map[string]int
	bad  []string // messages whose ids disagree
}

func newStreamReader(t *testing.T, s *natsjstest.Stream) *streamReader {
	t.Helper()
	r := &streamReader{seen: map[string]int{}}
	c, err := s.CreateOrUpdateConsumer(t.Context(), jetstream.ConsumerConfig{Durable: "reader", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := c.Consume(func(m jetstream.Msg) {
		id := m.Headers().Get("webhook-id")
		r.mu.Lock()
		r.seen[id]++
		if msgID := m.Headers().Get(jetstream.MsgIDHeader); msgID != id || id == "" {
			r.bad = append(r.bad, fmt.Sprintf("%s: webhook-id %q, Nats-Msg-Id %q", m.Subject(), id, msgID))
		}
		r.mu.Unlock()
		m.Ack()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return r
}

// read returns how many times each id was read, and the messages whose
// ids disagree.
func (r *streamReader) read() (map[string]int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.seen), slices.Clone(r.bad)
}

// natsGateway is a hookgate serve delivering source app to a stream
// through a proxy.
type natsGateway struct {
	t      *testing.T
	p      *process
	client *http.Client
}

// api decodes the admin API's answer to GET path into v.
func (g *natsGateway) api(path string, v any) {
	g.t.Helper()
	req, err := http.NewRequestWithContext(g.t.Context(), http.MethodGet, g.p.addr+path, nil)
	if err != nil {
		g.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+natsToken)
	resp, err := g.client.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		g.t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		g.t.Fatalf("GET %s: %v", path, err)
	}
}

// lane is the state of app's destination bus.
func (g *natsGateway) lane() admin.Lane {
	var st admin.Stats
	g.api("/api/stats", &st)
	for _, l := range st.Lanes {
		if l.Source == "app" && l.Destination == "bus" {
			return l
		}
	}
	return admin.Lane{}
}

// events returns every event of source app, by its key.
func (g *natsGateway) events() map[string]eventview.Event {
	var page struct {
		Events []eventview.Event `json:"events"`
	}
	g.api("/api/events?source=app&limit=1000", &page)
	out := map[string]eventview.Event{}
	for _, e := range page.Events {
		out[e.Key] = e
	}
	return out
}

// attempts returns the attempt log of event id's delivery to bus.
func (g *natsGateway) attempts(id int64) []eventview.Attempt {
	var d eventview.Detail
	g.api(fmt.Sprintf("/api/events/%d", id), &d)
	for _, del := range d.Deliveries {
		if del.Destination == "bus" {
			return del.Log
		}
	}
	return nil
}

// sendRange sends events evt_from to evt_to-1, each of which must be
// accepted (202).
func (g *natsGateway) sendRange(from, to int) {
	src := signer(g.t)
	for i := from; i < to; i++ {
		if st, err := send(g.t.Context(), g.client, src, g.p.addr, fmt.Sprintf("evt_%03d", i)); err != nil || st != http.StatusAccepted {
			g.t.Errorf("send evt_%03d: %d %v, want 202", i, st, err)
		}
	}
}

// Events sent to a gateway reach a JetStream stream and are read back
// once each, under their keys; with the connection to the broker cut
// mid-stream, intake goes on, the attempts fail and are logged, the
// destination pauses, and once the connection is back everything
// arrives, under the same ids, the broker's dedupe dropping the resends
// whose PubAck the cut lost (at most the attempts in flight).
func TestNATSDestination(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	stream := natsjstest.NewStream(t, natsjstest.Connect(t), 0)
	proxy, addr := pgtest.NewTCPProxy(t, natsjstest.Addr(t))
	dir := t.TempDir()
	for name, v := range map[string]string{"secret": crashSecret, "admin-token": natsToken} {
		if err := os.WriteFile(dir+"/"+name, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
database: sqlite:%[1]s/hookgate.db
admin:
  token: file:%[1]s/admin-token
sources:
  - name: app
    provider: standard
    secret: file:%[1]s/secret
    destinations:
      - name: bus
        url: nats://%[2]s
        subject: %[3]s.{source}.{type}
        timeout: 2s
        max_attempts: 100
        max_in_flight: %[4]d
        retry_initial: 50ms
        retry_max_delay: 500ms
        pause_after: 3
        pause_for: 500ms
`, dir, addr, stream.Prefix, natsInFlight)
	path := dir + "/hookgate.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	reader := newStreamReader(t, stream)
	g := &natsGateway{t: t, p: startServe(t, "--config", path), client: &http.Client{Timeout: 10 * time.Second}}

	g.sendRange(0, 50)
	eventually(t, "50 events read from the stream", func() bool { seen, _ := reader.read(); return len(seen) >= 50 })
	seen, _ := reader.read()
	for id, n := range seen {
		if n != 1 {
			t.Errorf("id %s read %d times before any cut, want once", id, n)
		}
	}

	// The cut comes while the next events are being delivered.
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		g.sendRange(50, 100)
	}()
	eventually(t, "the next events flowing", func() bool { seen, _ := reader.read(); return len(seen) >= 55 })
	proxy.Cut()
	<-sent
	g.sendRange(100, 120)
	eventually(t, "the destination paused", func() bool { return g.lane().State == "paused" })
	if l := g.lane(); l.Failures < 3 || !strings.Contains(l.LastError, "deliver to bus") {
		t.Errorf("paused lane = %+v, want at least 3 failures and the last error", l)
	}
	proxy.Restore()
	g.sendRange(120, 150)

	eventually(t, "150 events read from the stream", func() bool { seen, _ := reader.read(); return len(seen) >= 150 })
	var st admin.Stats
	eventually(t, "no event pending", func() bool { g.api("/api/stats", &st); return st.Pending == 0 })
	if n := st.Sources["app"].ByStatus["processed"]; n != 150 {
		t.Errorf("%d events processed, want 150: %+v", n, st.Sources["app"])
	}
	events := g.events()
	seen, bad := reader.read()
	if len(bad) > 0 {
		t.Errorf("messages whose ids disagree: %q", bad)
	}
	if keys := slices.Sorted(maps.Keys(events)); !slices.Equal(slices.Sorted(maps.Keys(seen)), keys) || len(keys) != 150 {
		t.Errorf("read ids %q, want the keys of the 150 events %q", slices.Sorted(maps.Keys(seen)), keys)
	}
	duplicates := 0
	for _, n := range seen {
		duplicates += n - 1
	}
	if duplicates > natsInFlight {
		t.Errorf("the consumer read %d duplicates, want at most the %d attempts in flight", duplicates, natsInFlight)
	}
	if n, err := stream.Count(t.Context()); err != nil || n != 150 {
		t.Errorf("the stream holds %d messages (%v), want 150: the broker's dedupe drops resends", n, err)
	}

	// The attempt log keeps the failures of the cut and the PubAcks.
	failed, resends := 0, 0
	for _, e := range events {
		log := g.attempts(e.ID)
		if len(log) == 0 || log[len(log)-1].Error != "" || !strings.HasPrefix(log[len(log)-1].Body, "stream HG") {
			t.Errorf("event %s: attempt log %+v, want it to end with the stream's PubAck", e.EventID, log)
			continue
		}
		for _, a := range log {
			switch {
			case a.Error != "":
				failed++
			case strings.Contains(a.Body, "duplicate of seq"):
				resends++
			}
		}
	}
	if failed < 3 {
		t.Errorf("%d failed attempts logged, want the cut's", failed)
	}
	if resends > natsInFlight {
		t.Errorf("%d attempts acknowledged as duplicates, want at most the %d in flight", resends, natsInFlight)
	}
	t.Logf("cut: %d failed attempts logged, %d resends the stream dropped as duplicates", failed, resends)
}
