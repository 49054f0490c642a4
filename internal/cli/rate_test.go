package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/internal/pgtest"
)

// rateSink is the receiver of a rated destination: it records when each
// delivery arrived and which events it has, and can answer one delivery
// 429 with a Retry-After.
type rateSink struct {
	*httptest.Server
	mu       sync.Mutex
	arrivals []time.Time
	ids      map[string]bool
	// throttleAt, when positive, is the count of deliveries after which
	// one is answered 429 with Retry-After: retryAfter seconds;
	// throttled is when.
	throttleAt, retryAfter int
	throttled              time.Time
}

func newRateSink(t *testing.T) *rateSink {
	s := &rateSink{ids: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.arrivals = append(s.arrivals, now)
		if s.throttleAt > 0 && len(s.arrivals) == s.throttleAt {
			s.throttled = now
			w.Header().Set("Retry-After", strconv.Itoa(s.retryAfter))
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		s.ids[r.Header.Get("webhook-id")] = true
	}))
	t.Cleanup(s.Close)
	return s
}

// delivered is how many events arrived, each once.
func (s *rateSink) delivered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}

// busiestSecond is the most of times within one second of each other,
// and when that second began.
func busiestSecond(times []time.Time) (int, time.Time) {
	at := slices.Clone(times)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	most, from := 0, time.Time{}
	j := 0
	for i := range at {
		for at[i].Sub(at[j]) >= time.Second {
			j++
		}
		if n := i - j + 1; n > most {
			most, from = n, at[j]
		}
	}
	return most, from
}

// rateConfig writes the configuration of a rated run: one source
// delivering to sink at rate, with the database lines given.
func rateConfig(t *testing.T, database string, sink *rateSink, rate string) string {
	t.Helper()
	dir := t.TempDir()
	secretFile := dir + "/secret"
	if err := os.WriteFile(secretFile, []byte(crashSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
%sworkers: 2
lease: 5s
sources:
  - name: app
    provider: standard
    secret: file:%s
    destinations:
      - name: rated
        url: %s/rated
        rate: %s
        max_in_flight: 16
        timeout: 2s
        retry_initial: 50ms
        retry_max_delay: 10s
        max_attempts: 1000
        pause_after: 0
`, database, secretFile, sink.URL, rate)
	path := dir + "/hookgate.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A destination's rate holds for the deployment, not per node: three
// nodes on PostgreSQL deliver 5,000 events to a destination with
// rate: 50/s, and never make more than 55 attempts within a second (the
// rate, with room for the jitter of waking at a slot), including after
// one node is killed midway; every event arrives. The attempts are
// counted when the nodes made them, from the attempt log: the receiver's
// own clock, in this process, reads a burst whenever this process is
// held up on a loaded machine, which says nothing of the nodes (what it
// saw is logged).
func TestRateAcrossNodes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	const (
		events = 5000
		limit  = 55
	)
	raw := pgtest.New(t)
	db := pooled(t, raw)
	sink := newRateSink(t)
	path := rateConfig(t, nodeDatabase(t, db, 0), sink, "50/s")
	ps := make([]*process, 3)
	for i := range ps {
		ps[i] = startServe(t, "--config", path)
	}
	sendOrdered(t, ps, 100, events/100)
	waitFor(t, 3*time.Minute, "half the events", func() bool { return sink.delivered() >= events/2 })
	if err := ps[1].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "every event", func() bool { return sink.delivered() >= events })
	sink.mu.Lock()
	received, _ := busiestSecond(sink.arrivals)
	sink.mu.Unlock()
	conn, err := pgx.Connect(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), `SELECT at FROM inbox_attempts WHERE destination = 'rated'`)
	if err != nil {
		t.Fatal(err)
	}
	made, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		t.Fatal(err)
	}
	most, from := busiestSecond(made)
	t.Logf("%d attempts; the busiest second: %d made, %d received", len(made), most, received)
	if most > limit {
		t.Fatalf("the nodes made %d attempts in the second from %s; the rate is 50/s", most, from.Format(time.RFC3339Nano))
	}
}

// A 429 with a Retry-After holds a rated destination on every node: after
// the receiver answers one delivery 429 with Retry-After: 3, no node
// delivers to it until the three seconds are over (but for deliveries
// already on their way), then all arrive.
func TestRetryAfterHoldsEveryNode(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	const events = 400
	db := pooled(t, pgtest.New(t))
	sink := newRateSink(t)
	sink.throttleAt, sink.retryAfter = 100, 3
	path := rateConfig(t, nodeDatabase(t, db, 0), sink, "100/s")
	ps := make([]*process, 2)
	for i := range ps {
		ps[i] = startServe(t, "--config", path)
	}
	sendOrdered(t, ps, 10, events/10)
	waitFor(t, 2*time.Minute, "every event", func() bool { return sink.delivered() >= events })
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var during []time.Duration
	for _, at := range sink.arrivals {
		if d := at.Sub(sink.throttled); d > 500*time.Millisecond && d < 2500*time.Millisecond {
			during = append(during, d)
		}
	}
	if len(during) > 0 {
		t.Fatalf("%d deliveries arrived while the destination asked to wait 3s (after %v)", len(during), during)
	}
}
