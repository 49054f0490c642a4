package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookgate/hookgate/verify"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// receiver is a deduplicating test server. It fails the test on a bad
// signature and on a redelivery of an id whose first send has not been
// answered yet, which loadgen must never send.
type receiver struct {
	t        *testing.T
	verifier *verify.Standard
	mu       sync.Mutex
	answered map[string]bool // id -> first send answered
	bodies   map[string][]byte
}

func newReceiver(t *testing.T) (*receiver, *httptest.Server) {
	t.Helper()
	v, err := verify.NewStandard(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	rc := &receiver{t: t, verifier: v, answered: map[string]bool{}, bodies: map[string][]byte{}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		rc.t.Errorf("read body: %v", err)
		return
	}
	if err := rc.verifier.Verify(r, body); err != nil {
		rc.t.Errorf("verify: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	id := r.Header.Get(verify.HeaderWebhookID)
	rc.mu.Lock()
	answered, seen := rc.answered[id]
	if seen && !bytes.Equal(body, rc.bodies[id]) {
		rc.t.Errorf("redelivery of %s has another body", id)
	}
	if !seen {
		rc.answered[id] = false
		rc.bodies[id] = body
	}
	rc.mu.Unlock()
	switch {
	case !seen:
		// The id counts as answered from here on: loadgen can only
		// learn that it was stored from the response written next.
		rc.mu.Lock()
		rc.answered[id] = true
		rc.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	case !answered:
		rc.t.Errorf("%s redelivered before its first send was answered", id)
		w.WriteHeader(http.StatusConflict)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func (rc *receiver) ids() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.answered)
}

func testConfig(url string) config {
	return config{
		url:    url,
		secret: testSecret,
		conns:  4,
		// A count, not a time, ends the run: on a loaded machine 200 ms
		// may pass before a request is answered.
		count:    300,
		duration: time.Minute,
		timeout:  10 * time.Second,
		size:     256,
		label:    "test",
		idPrefix: "test",
	}
}

func TestLoadDuplicatesAreRedeliveries(t *testing.T) {
	t.Parallel()
	rc, srv := newReceiver(t)
	cfg := testConfig(srv.URL + "/in/app")
	cfg.dup = 0.5
	res, err := load(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Other != 0 || res.Redelivered202 != 0 || res.New200 != 0 {
		t.Fatalf("errors %d, other %v, redelivered_202 %d, new_200 %d; want all 0",
			res.Errors, res.OtherStatuses, res.Redelivered202, res.New200)
	}
	if res.Accepted == 0 || res.Duplicates == 0 {
		t.Fatalf("accepted %d, duplicates %d; want both > 0", res.Accepted, res.Duplicates)
	}
	if res.Requests != res.Accepted+res.Duplicates {
		t.Errorf("requests %d != accepted %d + duplicates %d", res.Requests, res.Accepted, res.Duplicates)
	}
	if got := rc.ids(); uint64(got) != res.IDs {
		t.Errorf("receiver saw %d ids, loadgen reports %d", got, res.IDs)
	}
	if res.P99Ms < res.P50Ms || res.MaxMs < res.P99Ms {
		t.Errorf("p50 %g, p99 %g, max %g: not ordered", res.P50Ms, res.P99Ms, res.MaxMs)
	}

	replay := testConfig(cfg.url)
	replay.replay = int(res.IDs)
	again, err := load(context.Background(), replay)
	if err != nil {
		t.Fatal(err)
	}
	if again.Duplicates == 0 || again.Duplicates != again.Requests {
		t.Errorf("replay: duplicates %d of %d requests, want all and > 0", again.Duplicates, again.Requests)
	}
	if got := rc.ids(); uint64(got) != res.IDs {
		t.Errorf("replay sent new ids: receiver saw %d, first run sent %d", got, res.IDs)
	}
}

func TestLoadWithoutDuplicates(t *testing.T) {
	t.Parallel()
	_, srv := newReceiver(t)
	res, err := load(context.Background(), testConfig(srv.URL+"/in/app"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted == 0 || res.Duplicates != 0 || res.Requests != res.Accepted {
		t.Errorf("accepted %d, duplicates %d of %d requests; want all accepted", res.Accepted, res.Duplicates, res.Requests)
	}
}

// Several receivers in -url share the connections: each gets requests,
// and a redelivery may go to another receiver than its first send.
func TestLoadSeveralReceivers(t *testing.T) {
	t.Parallel()
	rc, _ := newReceiver(t)
	var hits [3]atomic.Int64
	urls := make([]string, len(hits))
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			rc.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		urls[i] = srv.URL + "/in/app"
	}
	cfg := testConfig(strings.Join(urls, ","))
	cfg.conns, cfg.dup = 6, 0.3
	res, err := load(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Redelivered202 != 0 || res.New200 != 0 || res.Accepted == 0 || res.Duplicates == 0 {
		t.Fatalf("%+v", res)
	}
	var total int64
	for i := range hits {
		if hits[i].Load() == 0 {
			t.Errorf("receiver %d got no request", i)
		}
		total += hits[i].Load()
	}
	if total < int64(res.Requests) {
		t.Errorf("receivers saw %d requests, loadgen counted %d", total, res.Requests)
	}
}

func TestLoadCountsFailures(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL)
	cfg.dup = 1
	res, err := load(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Other != res.Requests || res.OtherStatuses["503"] != res.Requests {
		t.Errorf("other %d (%v) of %d requests, want all 503", res.Other, res.OtherStatuses, res.Requests)
	}
	// Nothing was stored, so -dup 1 had nothing to redeliver.
	if res.IDs < uint64(res.Requests) {
		t.Errorf("ids %d < requests %d: a failed first send was redelivered", res.IDs, res.Requests)
	}
}

func TestLoadTransportErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	res, err := load(context.Background(), testConfig(url))
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != res.Requests || res.firstErr == nil {
		t.Errorf("errors %d of %d requests (first %v), want all", res.Errors, res.Requests, res.firstErr)
	}
}

func TestConfigCheck(t *testing.T) {
	t.Parallel()
	for name, mod := range map[string]func(*config){
		"no url":        func(c *config) { c.url = "" },
		"not http":      func(c *config) { c.url = "ftp://x/in/app" },
		"no secret":     func(c *config) { c.secret = "" },
		"no conns":      func(c *config) { c.conns = 0 },
		"no duration":   func(c *config) { c.duration = 0 },
		"dup above 1":   func(c *config) { c.dup = 1.5 },
		"dup below 0":   func(c *config) { c.dup = -0.1 },
		"negative size": func(c *config) { c.size = -1 },
		"negative warm": func(c *config) { c.warmup = -time.Second },
		"no timeout":    func(c *config) { c.timeout = 0 },
		"negative ids":  func(c *config) { c.replay = -1 },
		"negative rate": func(c *config) { c.rate = -1 },
		"negative n":    func(c *config) { c.count = -1 },
	} {
		cfg := testConfig("http://127.0.0.1:1/in/app")
		mod(&cfg)
		if err := cfg.check(); !errors.Is(err, errUsage) {
			t.Errorf("%s: check() = %v, want errUsage", name, err)
		}
	}
	if err := testConfig("http://127.0.0.1:1/in/app").check(); err != nil {
		t.Errorf("valid config: check() = %v", err)
	}
}

func TestEventBody(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 10, 60, 512, 4096} {
		body := eventBody("app-17", size)
		var v struct{ Type, ID, Pad string }
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("size %d: not JSON: %v", size, err)
		}
		if v.ID != "app-17" {
			t.Errorf("size %d: id %q, want app-17", size, v.ID)
		}
		minimal := len(eventBody("app-17", 0))
		if want := max(size, minimal); len(body) != want {
			t.Errorf("size %d: %d bytes, want %d", size, len(body), want)
		}
	}
	if !bytes.Equal(eventBody("a-1", 512), eventBody("a-1", 512)) {
		t.Error("two bodies of one id differ")
	}
}

func TestEventID(t *testing.T) {
	t.Parallel()
	if got := eventID("bench", 42); got != "bench-42" {
		t.Errorf("eventID = %q, want bench-42", got)
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	var d []time.Duration
	for i := 1; i <= 200; i++ {
		d = append(d, time.Duration(i))
	}
	for _, tc := range []struct {
		in   []time.Duration
		pct  int
		want time.Duration
	}{
		{nil, 99, 0},
		{d[:1], 50, 1},
		{d[:1], 99, 1},
		{d[:100], 50, 50},
		{d[:100], 99, 99},
		{d, 99, 198},
		{d, 100, 200},
		{d[:3], 99, 3},
	} {
		if got := percentile(tc.in, tc.pct); got != tc.want {
			t.Errorf("percentile(%d values, %d) = %d, want %d", len(tc.in), tc.pct, got, tc.want)
		}
	}
}

func TestIDPool(t *testing.T) {
	t.Parallel()
	var p idPool
	rng := rand.New(rand.NewPCG(1, 2))
	if _, ok := p.pick(rng); ok {
		t.Fatal("pick from an empty pool succeeded")
	}
	p.add(7)
	p.add(9)
	seen := map[uint64]bool{}
	for range 100 {
		n, ok := p.pick(rng)
		if !ok || (n != 7 && n != 9) {
			t.Fatalf("pick = %d, %v; want 7 or 9", n, ok)
		}
		seen[n] = true
	}
	if len(seen) != 2 {
		t.Errorf("100 picks returned %v, want both members", seen)
	}
}

func TestRunOutput(t *testing.T) {
	t.Parallel()
	_, srv := newReceiver(t)
	args := []string{"-url", srv.URL + "/in/app", "-secret", testSecret, "-c", "2", "-d", "100ms", "-warmup", "50ms", "-label", "out"}
	var out, errs strings.Builder
	if err := run(context.Background(), append(args, "-json"), &out, &errs); err != nil {
		t.Fatalf("run -json: %v (%s)", err, errs.String())
	}
	var res result
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatalf("-json output %q: %v", out.String(), err)
	}
	if res.Label != "out" || res.Requests == 0 || res.Accepted+res.Duplicates != res.Requests {
		t.Errorf("-json result %+v", res)
	}
	out.Reset()
	if err := run(context.Background(), args, &out, &errs); err != nil {
		t.Fatalf("run: %v (%s)", err, errs.String())
	}
	line := out.String()
	if strings.Count(line, "\n") != 1 || !strings.HasPrefix(line, "out ") || !strings.Contains(line, "p99(200)") {
		t.Errorf("line output %q", line)
	}
	if err := run(context.Background(), []string{"-url", srv.URL, "extra"}, &out, &errs); !errors.Is(err, errUsage) {
		t.Errorf("run with an argument = %v, want errUsage", err)
	}
}

func TestLineWithoutDuplicates(t *testing.T) {
	t.Parallel()
	r := &result{Label: "x", Requests: 2, Accepted: 2, P50Ms: 1.5, P99Ms: 2, MaxMs: 2, P99AcceptedMs: 2}
	line := r.line()
	for _, want := range []string{"p50 1.50ms", "p99(202) 2.00ms", "p99(200) -"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
}

// stampedEvent is the JSON of a stamped body.
type stampedEvent struct {
	ID     string `json:"id"`
	SentNs int64  `json:"sent_ns"`
	Order  string `json:"order"`
	Seq    uint64 `json:"seq"`
	State  string `json:"state"`
}

func TestStampedBody(t *testing.T) {
	t.Parallel()
	sent := time.Unix(1700000000, 123456789)
	for _, size := range []int{0, 60, 512, 4096} {
		body := stampedBody("app-117", 117, sent, size)
		var ev stampedEvent
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Fatalf("size %d: not JSON: %v", size, err)
		}
		want := stampedEvent{ID: "app-117", SentNs: sent.UnixNano(), Order: "o-17", Seq: 117, State: "paid"}
		if ev != want {
			t.Errorf("size %d: %+v, want %+v", size, ev, want)
		}
		if size >= 512 && len(body) != len(eventBody("app-117", size)) {
			t.Errorf("size %d: %d bytes, eventBody has %d", size, len(body), len(eventBody("app-117", size)))
		}
	}
	// Successive events of one order advance its sequence and change its
	// state; events of other orders leave it alone.
	var prev stampedEvent
	for i, n := range []uint64{5, 105, 205, 305, 405} {
		var ev stampedEvent
		if err := json.Unmarshal(stampedBody("a", n, sent, 256), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Order != "o-5" {
			t.Errorf("event %d: order %q, want o-5", n, ev.Order)
		}
		if i > 0 && (ev.Seq <= prev.Seq || ev.State == prev.State) {
			t.Errorf("event %d after %d: seq %d -> %d, state %q -> %q; want a higher seq and another state",
				n, prev.Seq, prev.Seq, ev.Seq, prev.State, ev.State)
		}
		prev = ev
	}
}

func TestPacerDue(t *testing.T) {
	t.Parallel()
	start := time.Unix(100, 0)
	p := newPacer(start, 4)
	for k, want := range []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, time.Second} {
		if got := p.due(uint64(k)).Sub(start); got != want {
			t.Errorf("rate 4: request %d due at +%s, want +%s", k, got, want)
		}
	}
	if got := newPacer(start, 0).due(1000); !got.Equal(start) {
		t.Errorf("rate 0: request 1000 due at %s, want the start", got)
	}
}

// bodyServer answers 202 and keeps every body it receives.
type bodyServer struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (b *bodyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.bodies = append(b.bodies, body)
	b.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func (b *bodyServer) received() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.bodies)
}

func newBodyServer(t *testing.T) (*bodyServer, *httptest.Server) {
	t.Helper()
	b := &bodyServer{}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	return b, srv
}

func TestLoadCountAndStamp(t *testing.T) {
	t.Parallel()
	b, srv := newBodyServer(t)
	cfg := testConfig(srv.URL)
	cfg.duration = time.Minute // -n ends the run long before
	cfg.count = 50
	cfg.stamp = true
	before := time.Now()
	res, err := load(context.Background(), cfg)
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	bodies := b.received()
	if res.Requests != 50 || res.Accepted != 50 || len(bodies) != 50 || res.IDs != 50 {
		t.Fatalf("requests %d, accepted %d, ids %d, received %d; want 50 each", res.Requests, res.Accepted, res.IDs, len(bodies))
	}
	seqs := map[uint64]bool{}
	for _, body := range bodies {
		if len(body) != cfg.size {
			t.Errorf("body of %d bytes, want %d", len(body), cfg.size)
		}
		var ev stampedEvent
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
		if ev.SentNs < before.UnixNano() || ev.SentNs > after.UnixNano() {
			t.Errorf("%s: sent_ns %d outside the run [%d, %d]", ev.ID, ev.SentNs, before.UnixNano(), after.UnixNano())
		}
		if ev.ID != eventID("test", ev.Seq) {
			t.Errorf("id %q carries seq %d", ev.ID, ev.Seq)
		}
		seqs[ev.Seq] = true
	}
	if len(seqs) != 50 {
		t.Errorf("%d distinct seqs in 50 new events", len(seqs))
	}
}

func TestLoadRate(t *testing.T) {
	t.Parallel()
	b, srv := newBodyServer(t)
	cfg := testConfig(srv.URL)
	cfg.rate = 40
	cfg.duration = 250 * time.Millisecond
	start := time.Now()
	res, err := load(context.Background(), cfg)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	// Request k is not started before k/rate, so no more than
	// rate*elapsed+1 can have been sent; unpaced, 4 connections to a local
	// server send hundreds in this time.
	limit := int(cfg.rate*elapsed.Seconds()) + 1
	if got := len(b.received()); got == 0 || got > limit {
		t.Errorf("received %d requests in %s at -rate %g, want 1..%d", got, elapsed, cfg.rate, limit)
	}
	if res.Requests == 0 {
		t.Error("no request measured")
	}
}
