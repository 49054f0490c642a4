package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/admin"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/internal/source"
)

// orderSink is the receiver of the ordered destinations: it records, per
// destination (path) and key, the versions it took in the order it took
// them, with their webhook-sequence and webhook-skipped headers. It
// answers 503 to every delivery of the failing key until every other key
// of /ordered has all its events (should the others never finish, the
// test's wait for every delivery fails), and refuses (400) the events in
// refuse once on each destination but /ordered.
type orderSink struct {
	*httptest.Server
	keys, perKey int
	failing      string

	mu sync.Mutex
	// got are the versions taken, by path then key; seqs and skips their
	// headers.
	got   map[string]map[string][]int
	seqs  map[string]map[string][]int
	skips map[string]map[string][]string
	// healthyDone is the arrival number at which the last event of the
	// keys other than the failing one was taken; recovered the one at
	// which the failing key was first taken; arrivals counts them.
	healthyDone, recovered, arrivals int
	refuse                           map[string]bool
	refused                          map[string]bool
}

// orderEvent is the body of the test's events.
type orderEvent struct {
	Key string `json:"key"`
	V   int    `json:"v"`
}

func newOrderSink(t *testing.T, keys, perKey int, refuse ...string) *orderSink {
	t.Helper()
	s := &orderSink{keys: keys, perKey: perKey, failing: "k0",
		got: map[string]map[string][]int{}, seqs: map[string]map[string][]int{}, skips: map[string]map[string][]string{},
		refuse: map[string]bool{}, refused: map[string]bool{}}
	for _, r := range refuse {
		s.refuse[r] = true
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *orderSink) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var ev orderEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := r.URL.Path
	if path == "/ordered" && ev.Key == s.failing && s.healthyDone == 0 {
		http.Error(w, "not now", http.StatusServiceUnavailable)
		return
	}
	id := fmt.Sprintf("%s %s/%d", path, ev.Key, ev.V)
	if path != "/ordered" && s.refuse[fmt.Sprintf("%s/%d", ev.Key, ev.V)] && !s.refused[id] {
		s.refused[id] = true
		http.Error(w, "refused", http.StatusBadRequest)
		return
	}
	if s.got[path] == nil {
		s.got[path], s.seqs[path], s.skips[path] = map[string][]int{}, map[string][]int{}, map[string][]string{}
	}
	seq, _ := strconv.Atoi(r.Header.Get(deliver.HeaderSequence))
	s.got[path][ev.Key] = append(s.got[path][ev.Key], ev.V)
	s.seqs[path][ev.Key] = append(s.seqs[path][ev.Key], seq)
	s.skips[path][ev.Key] = append(s.skips[path][ev.Key], r.Header.Get(deliver.HeaderSkipped))
	s.arrivals++
	if path == "/ordered" {
		if ev.Key == s.failing && s.recovered == 0 {
			s.recovered = s.arrivals
		}
		if s.healthyDone == 0 && s.healthyComplete() {
			s.healthyDone = s.arrivals
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// healthyComplete reports whether /ordered has every event of every key
// but the failing one. The caller holds mu.
func (s *orderSink) healthyComplete() bool {
	for k := range s.keys {
		key := fmt.Sprintf("k%d", k)
		if key != s.failing && len(distinct(s.got["/ordered"][key])) < s.perKey {
			return false
		}
	}
	return true
}

// distinct returns the versions in vs, each once.
func distinct(vs []int) map[int]bool {
	m := make(map[int]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

// count is how many events path took, each once however many times it
// was made.
func (s *orderSink) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, vs := range s.got[path] {
		n += len(distinct(vs))
	}
	return n
}

// orderConfig is the configuration of an ordered run with the database
// lines given: one
// source whose events are entities keyed by json:key and versioned by
// json:v, delivered to sink at /ordered (order: entity, on: all, so
// that events that arrive after a newer one are delivered too) and to
// the destinations in extra.
func orderConfig(t *testing.T, database string, sink *orderSink, extra string) string {
	t.Helper()
	dir := t.TempDir()
	secretFile := dir + "/secret"
	if err := os.WriteFile(secretFile, []byte(crashSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
%sworkers: 2
batch: 100
lease: 5s
sources:
  - name: app
    provider: standard
    secret: file:%s
    entity:
      type: const:order
      id: json:key
      version: json:v
    destinations:
      - name: ordered
        url: %s/ordered
        on: all
        order: entity
        max_in_flight: 8
        timeout: 2s
        retry_initial: 50ms
        retry_max_delay: 300ms
        max_attempts: 1000
        pause_after: 0
%s`, database, secretFile, sink.URL, extra)
	path := dir + "/hookgate.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sendOrdered posts every version of every key, in a random order, to the
// nodes in turn, 16 at a time, and fails t unless each is accepted.
func sendOrdered(t *testing.T, ps []*process, keys, perKey int) {
	t.Helper()
	src := signer(t)
	var evs []orderEvent
	for k := range keys {
		for v := 1; v <= perKey; v++ {
			evs = append(evs, orderEvent{Key: fmt.Sprintf("k%d", k), V: v})
		}
	}
	rand.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	client := &http.Client{Timeout: 10 * time.Second}
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				st, err := sendEvent(t.Context(), client, src, ps[i%len(ps)].addr, evs[i])
				if err != nil || st != http.StatusAccepted {
					t.Errorf("event %+v: %d, %v; want 202", evs[i], st, err)
				}
			}
		})
	}
	for i := range evs {
		work <- i
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

func sendEvent(ctx context.Context, client *http.Client, src *source.Source, base string, ev orderEvent) (int, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/in/app", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("webhook-id", fmt.Sprintf("%s-v%d", ev.Key, ev.V))
	if err := src.Signer().Sign(req, body); err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// laneHold holds lanes while the events are sent and processed, so that
// every delivery waits at once and the order the receiver sees is the
// store's, not the arrival's; release lets them go.
type laneHold struct {
	t     *testing.T
	store inbox.Backend
	lanes []inbox.Lane
}

func holdLanes(t *testing.T, store inbox.Backend, dests ...string) *laneHold {
	t.Helper()
	h := &laneHold{t: t, store: store}
	for _, d := range dests {
		h.lanes = append(h.lanes, inbox.Lane{Source: "app", Destination: d})
	}
	h.set(true)
	return h
}

func (h *laneHold) set(held bool) {
	h.t.Helper()
	holder, ok := h.store.(inbox.LaneHolder)
	if !ok {
		h.t.Fatal("the store cannot hold a lane")
	}
	for _, l := range h.lanes {
		if err := holder.HoldLane(h.t.Context(), l, held); err != nil {
			h.t.Fatal(err)
		}
	}
}

// release waits until every event is processed and waits in its lanes
// (want deliveries in each), then lets the lanes go.
func (h *laneHold) release(want int) {
	h.t.Helper()
	waitFor(h.t, 2*time.Minute, "every event waiting in its lanes", func() bool {
		st, err := h.store.Stats(h.t.Context())
		if err != nil {
			h.t.Fatal(err)
		}
		for _, l := range h.lanes {
			if orderLaneState(st, l).Pending != want {
				return false
			}
		}
		return true
	})
	h.set(false)
}

func orderLaneState(st inbox.Stats, l inbox.Lane) inbox.LaneState {
	for _, ls := range st.Lanes {
		if ls.Lane == l {
			return ls
		}
	}
	return inbox.LaneState{}
}

// waitFor polls cond until it holds, failing t after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkOrdered: every key of path got all its versions in version order,
// at positions 1, 2, 3... with no skip. Delivery is at least once: an
// attempt whose answer came after its timeout is made again, the same
// event at the same position right after it, which a receiver
// recognizes by its webhook-sequence; such repeats are passed over.
func (s *orderSink) checkOrdered(t *testing.T, path string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	want := make([]int, s.perKey)
	for v := range want {
		want[v] = v + 1
	}
	for k := range s.keys {
		key := fmt.Sprintf("k%d", k)
		got, seqs := s.got[path][key], s.seqs[path][key]
		var vs, ps []int
		for i := range got {
			if i > 0 && got[i] == got[i-1] && seqs[i] == seqs[i-1] {
				t.Logf("%s key %s: version %d made again at position %d", path, key, got[i], seqs[i])
				continue
			}
			vs, ps = append(vs, got[i]), append(ps, seqs[i])
		}
		if !slices.Equal(vs, want) {
			t.Errorf("%s key %s took versions %v, want 1 to %d in order", path, key, got, s.perKey)
		}
		if !slices.Equal(ps, want) {
			t.Errorf("%s key %s took webhook-sequence %v, want 1 to %d", path, key, seqs, s.perKey)
		}
		for _, sk := range s.skips[path][key] {
			if sk != "" {
				t.Errorf("%s key %s: webhook-skipped %q, want none", path, key, sk)
			}
		}
	}
}

// checkIsolated: the healthy keys were all delivered before the failing
// key's first success: its failures held back none of them.
func (s *orderSink) checkIsolated(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.healthyDone == 0 || s.recovered <= s.healthyDone {
		t.Errorf("the failing key was first delivered at arrival %d, the other keys finished at %d: "+
			"they waited for it", s.recovered, s.healthyDone)
	}
}

// Per-key order across three nodes on PostgreSQL: 100 keys x 50 events,
// sent in a random order to the three nodes, wait in the store (the lane
// held) and are then delivered by all three at once. Each key's events
// reach the receiver one at a time in version order with webhook-sequence
// 1..50, although the receiver fails one key for a while: that key backs
// off alone (every other key is complete before its first success) and
// resumes in order.
func TestOrderedDeliveryAcrossNodes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	const keys, perKey = 100, 50
	db := pooled(t, pgtest.New(t))
	sink := newOrderSink(t, keys, perKey)
	store := openDB(t, db)
	hold := holdLanes(t, store, "ordered")
	path := orderConfig(t, nodeDatabase(t, db, 0), sink, "")
	ps := make([]*process, 3)
	for i := range ps {
		ps[i] = startServe(t, "--config", path)
	}
	sendOrdered(t, ps, keys, perKey)
	hold.release(keys * perKey)
	waitFor(t, 4*time.Minute, "every delivery", func() bool { return sink.count("/ordered") >= keys*perKey })
	sink.checkOrdered(t, "/ordered")
	sink.checkIsolated(t)
}

// Per-key order on SQLite, one node, with both ends of on_exhausted: a
// delivery refused (400) once fails for good. On the skip destination its
// key moves on, and the next delivery says so (webhook-skipped: 1, and a
// gap in webhook-sequence); on the block destination the key waits (stats
// count it blocked) while the other keys go on, until the operator
// replays the dead event, which is delivered first, then the rest in order.
func TestOrderedDeliverySQLite(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	const keys, perKey = 20, 20
	db := "sqlite:" + t.TempDir() + "/hookgate.db"
	sink := newOrderSink(t, keys, perKey, "k5/7")
	store := openDB(t, db)
	hold := holdLanes(t, store, "ordered", "skip", "block")
	dest := func(name, onExhausted string) string {
		return fmt.Sprintf(`      - name: %s
        url: %s/%s
        on: all
        order: entity
        on_exhausted: %s
        max_in_flight: 4
        timeout: 2s
        retry_initial: 50ms
        retry_max_delay: 300ms
`, name, sink.URL, name, onExhausted)
	}
	path := orderConfig(t, "database: "+db+"\n", sink, dest("skip", "skip")+dest("block", "block"))
	ps := []*process{startServe(t, "--config", path)}
	sendOrdered(t, ps, keys, perKey)
	hold.release(keys * perKey)
	total := keys * perKey
	waitFor(t, 3*time.Minute, "every delivery but the refused one", func() bool {
		return sink.count("/ordered") >= total && sink.count("/skip") >= total-1 && sink.count("/block") >= total-perKey+6
	})
	sink.checkOrdered(t, "/ordered")
	sink.checkIsolated(t)

	sink.mu.Lock()
	skipped, skipSeqs, skipHeaders := sink.got["/skip"]["k5"], sink.seqs["/skip"]["k5"], sink.skips["/skip"]["k5"]
	sink.mu.Unlock()
	var want, wantSeq []int
	for v := 1; v <= perKey; v++ {
		if v != 7 {
			want, wantSeq = append(want, v), append(wantSeq, v)
		}
	}
	if !slices.Equal(skipped, want) || !slices.Equal(skipSeqs, wantSeq) {
		t.Errorf("skip: k5 took %v at positions %v, want all but 7, with a gap at 7", skipped, skipSeqs)
	}
	for i, v := range skipped {
		if wantSkip := map[bool]string{true: "1", false: ""}[v == 8]; skipHeaders[i] != wantSkip {
			t.Errorf("skip: k5 version %d webhook-skipped %q, want %q", v, skipHeaders[i], wantSkip)
		}
	}

	block := inbox.Lane{Source: "app", Destination: "block"}
	waitFor(t, time.Minute, "the block destination's key blocked", func() bool {
		st, err := store.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return orderLaneState(st, block).Blocked == 1
	})
	out, err := command(t, "stats", "--json", "--database", db).Output()
	if err != nil {
		t.Fatalf("stats --json: %v", err)
	}
	var stats admin.Stats
	if err := json.Unmarshal(out, &stats); err != nil {
		t.Fatal(err)
	}
	for _, l := range stats.Lanes {
		if want := map[bool]int{true: 1}[l.Destination == "block"]; l.Blocked != want {
			t.Errorf("stats --json: %s has %d blocked keys, want %d", l.Destination, l.Blocked, want)
		}
	}
	if out, err := command(t, "stats", "--database", db).Output(); err != nil || !bytes.Contains(out, []byte("(1 keys blocked)")) {
		t.Errorf("stats: %v\n%s\nwant the block destination's blocked key", err, out)
	}
	sink.mu.Lock()
	if got := sink.got["/block"]["k5"]; !slices.Equal(got, []int{1, 2, 3, 4, 5, 6}) {
		t.Errorf("block: k5 took %v while blocked, want 1 to 6", got)
	}
	sink.mu.Unlock()
	dead, err := store.List(t.Context(), inbox.Filter{Status: inbox.StatusDead})
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].EventID != "k5-v7" {
		t.Fatalf("dead events %v, want k5-v7 alone", dead)
	}
	if n, err := store.Replay(t.Context(), inbox.ReplayFilter{IDs: []int64{dead[0].ID}}, nil); err != nil || n != 1 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	waitFor(t, time.Minute, "the blocked key's deliveries", func() bool { return sink.count("/block") >= total })
	sink.checkOrdered(t, "/block")
}
