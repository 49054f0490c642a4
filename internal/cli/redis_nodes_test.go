package cli_test

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/hookgate/hookgate/dedupe/redis/redistest"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/internal/source"
)

// frontNodes starts n `hookgate serve` processes on one fresh PostgreSQL
// database, sharing the Redis front at redisURL under a key prefix of the
// test's own, and returns them with the database's URL and a client of
// the test's Redis and the prefix.
func frontNodes(t *testing.T, n int, redisURL string) (ps []*process, db string, rdb *goredis.Client, prefix string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	rdb, prefix = redistest.New(t)
	if redisURL == "" {
		redisURL = redistest.URL()
	}
	db = pgtest.New(t)
	// The tests read hookgate_front_up from /metrics.
	extra := fmt.Sprintf("dedupe:\n  front: %q\n  front_prefix: %s\nmetrics:\n  public: true\n", redisURL, prefix)
	return nodesOn(t, db, n, "", extra), db, rdb, prefix
}

// frontKeys returns the keys of the front under prefix. It may be called
// from any goroutine: it fails t with Error.
func frontKeys(t *testing.T, rdb *goredis.Client, prefix string) []string {
	t.Helper()
	var keys []string
	iter := rdb.Scan(t.Context(), 0, "{"+prefix+"}*", 1000).Iterator()
	for iter.Next(t.Context()) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Error(err)
	}
	return keys
}

// G2 with the Redis front: 100 concurrent copies of one event spread over
// two nodes give exactly one 202 and one row; the others are duplicates
// (200), or in flight on the other node (409, from the front's lease).
func TestFrontNodesAcceptOneCopy(t *testing.T) {
	t.Parallel()
	ps, db, rdb, prefix := frontNodes(t, 2, "")
	counts := sendCopies(t, ps, "msg_front_once", 100)
	t.Logf("answers %v", counts)
	if counts[http.StatusAccepted] != 1 || counts[http.StatusOK]+counts[http.StatusConflict] != 99 {
		t.Errorf("answers %v, want one 202 and 99 of 200 or 409", counts)
	}
	if n := storedRows(t, openDB(t, db)); n != 1 {
		t.Errorf("%d rows stored, want 1", n)
	}
	// Redis is a cache in front of the inbox: a call past the front's
	// timeout on a loaded machine leaves it without the key, rightly.
	t.Logf("front keys: %v", frontKeys(t, rdb, prefix))
}

// The inbox's unique key is the durable line behind the front: every key
// of the front deleted (what FLUSHALL does to it) in the middle of a burst
// of 5,000 requests over two nodes, a fifth of them redeliveries, accepts
// no event twice, and every acknowledged event is stored exactly once.
func TestFrontFlushedMidBurst(t *testing.T) {
	t.Parallel()
	ps, db, rdb, prefix := frontNodes(t, 2, "")
	var flushed int
	res := sendBurst(t, burstOptions{
		senders: 16, requests: 5000,
		pick: func() string { return ps[rand.IntN(len(ps))].addr },
		at:   2500,
		mid: func() {
			keys := frontKeys(t, rdb, prefix)
			if len(keys) == 0 {
				t.Error("the front holds no key in the middle of the burst")
				return
			}
			if err := rdb.Del(t.Context(), keys...).Err(); err != nil {
				t.Error(err)
			}
			flushed = len(keys)
		},
	})
	res.check(t, storedEvents(t, openDB(t, db)))
	res.checkAcceptedOnce(t)
	t.Logf("%d front keys deleted mid-burst; %d events acknowledged, %d redeliveries; answers %v", flushed, len(res.acked), res.redeliveries, res.answers)
}

// A Redis that goes away in the middle of a burst is bypassed: every event
// is still accepted exactly once, none refused with 503; once it answers
// again the nodes use the front again (hookgate_front_up 1, and new events'
// keys written to it).
func TestFrontOutageMidBurst(t *testing.T) {
	t.Parallel()
	u, err := neturl.Parse(redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy, addr := pgtest.NewTCPProxy(t, u.Host)
	u.Host = addr
	ps, db, rdb, prefix := frontNodes(t, 2, u.String())
	res := sendBurst(t, burstOptions{
		senders: 8, requests: 2000,
		pick: func() string { return ps[rand.IntN(len(ps))].addr },
		at:   700,
		mid:  proxy.Cut,
	})
	for _, p := range ps {
		if up := metric(t, p.addr, "hookgate_front_up"); up != "0" {
			t.Errorf("%s: hookgate_front_up %s during the outage, want 0", p.addr, up)
		}
	}
	res.check(t, storedEvents(t, openDB(t, db)))
	res.checkAcceptedOnce(t)
	t.Logf("%d events acknowledged, %d redeliveries; answers %v", len(res.acked), res.redeliveries, res.answers)

	proxy.Restore()
	before := len(frontKeys(t, rdb, prefix))
	src := signer(t)
	client := &http.Client{Timeout: 10 * time.Second}
	n := 0
	eventually(t, "the front to be used again", func() bool {
		// A new event to each node each time: a call past the front's
		// timeout (a loaded machine) bypasses it again for a moment.
		n++
		up := true
		for i, p := range ps {
			if _, err := send(t.Context(), client, src, p.addr, fmt.Sprintf("msg_after_%d_%d", i, n)); err != nil {
				t.Fatal(err)
			}
			up = up && metric(t, p.addr, "hookgate_front_up") == "1"
		}
		return up && len(frontKeys(t, rdb, prefix)) > before
	})
}

// sendCopies sends n concurrent copies of the event id, copy i to node
// i mod len(ps), and counts the answers by status.
func sendCopies(t *testing.T, ps []*process, id string, n int) map[int]int {
	t.Helper()
	src := signer(t)
	client := &http.Client{Timeout: 10 * time.Second}
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		wg     sync.WaitGroup
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			st, err := send(context.Background(), client, src, ps[i%len(ps)].addr, id)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			counts[st]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return counts
}

// sink is a destination that counts the deliveries of each webhook-id.
type sink struct {
	*httptest.Server
	mu        sync.Mutex
	delivered map[string]int
}

// newSink starts a sink, closed when t ends.
func newSink(t *testing.T) *sink {
	t.Helper()
	s := &sink{delivered: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.delivered[r.Header.Get("webhook-id")]++
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	return s
}

// counts returns the deliveries so far: webhook-id -> deliveries.
func (s *sink) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.delivered)
}

// metric returns the value of the unlabelled metric name on the /metrics
// of the node at addr ("" when absent).
func metric(t *testing.T, addr, name string) string {
	t.Helper()
	resp, err := http.Get(addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s (the node's config must serve it: metrics.public: true)", resp.Status)
	}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), name+" "); ok {
			return v
		}
	}
	return ""
}

// burstOptions shape a burst of signed requests.
type burstOptions struct {
	senders, requests int
	// pick returns the node the next request goes to.
	pick func() string
	// redeliver are events sent before the burst, which its redeliveries
	// may repeat as well as the burst's own.
	redeliver []string
	// mid, when set, runs once the at'th request has been answered, while
	// the other senders go on.
	at  int
	mid func()
	// gone reports whether the node at addr was stopped on purpose: a
	// request it does not answer is sent again to another node.
	gone func(addr string) bool
}

// burstResult is what the senders of a burst were answered.
type burstResult struct {
	mu           sync.Mutex
	accepted     map[string]int // event id -> 202 answers
	acceptedOn   map[string]int // node address + " " + event id -> 202 answers
	acked        map[string]bool
	answers      map[int]int // status -> answers
	redeliveries int
}

// sendBurst sends opts.requests signed events from opts.senders
// goroutines; about a fifth repeat an event sent before, by any sender.
// Every request must be answered 202, 200 or 409 (then sent again, as a
// provider would) — never 503 or any other status.
func sendBurst(t *testing.T, opts burstOptions) *burstResult {
	t.Helper()
	src := signer(t)
	client := &http.Client{Timeout: 10 * time.Second}
	res := &burstResult{accepted: map[string]int{}, acceptedOn: map[string]int{}, acked: map[string]bool{}, answers: map[int]int{}}
	var (
		sentMu sync.Mutex
		sent   = append([]string(nil), opts.redeliver...)
		next   int
		midRan = make(chan struct{})
		once   sync.Once
		wg     sync.WaitGroup
	)
	for g := range opts.senders {
		wg.Go(func() {
			for {
				sentMu.Lock()
				if next == opts.requests {
					sentMu.Unlock()
					return
				}
				n := next
				next++
				id := fmt.Sprintf("msg_b%d_%d", g, n)
				redelivery := len(sent) > 0 && rand.IntN(5) == 0
				if redelivery {
					id = sent[rand.IntN(len(sent))]
				}
				sentMu.Unlock()
				if !sendUntilDone(t, client, src, opts, res, id) {
					return
				}
				sentMu.Lock()
				if redelivery {
					res.redeliveries++
				} else {
					sent = append(sent, id)
				}
				sentMu.Unlock()
				if opts.mid != nil && n == opts.at {
					once.Do(func() { opts.mid(); close(midRan) })
				}
			}
		})
	}
	wg.Wait()
	if opts.mid != nil {
		select {
		case <-midRan:
		default:
			t.Errorf("the burst ended before its %d'th request", opts.at)
		}
	}
	return res
}

// sendUntilDone sends id until a node answers 202 or 200, recording the
// answers in res. It reports false (after failing t) when id cannot be
// sent.
func sendUntilDone(t *testing.T, client *http.Client, src *source.Source, opts burstOptions, res *burstResult, id string) bool {
	for attempt := 0; ; attempt++ {
		addr := opts.pick()
		st, err := send(context.Background(), client, src, addr, id)
		if err != nil {
			if opts.gone == nil || !opts.gone(addr) {
				t.Errorf("%s to %s: %v", id, addr, err)
				return false
			}
		} else {
			res.mu.Lock()
			res.answers[st]++
			if st == http.StatusAccepted {
				res.accepted[id]++
				res.acceptedOn[addr+" "+id]++
			}
			if st == http.StatusAccepted || st == http.StatusOK {
				res.acked[id] = true
			}
			res.mu.Unlock()
			switch st {
			case http.StatusAccepted, http.StatusOK:
				return true
			case http.StatusConflict:
			default:
				t.Errorf("%s to %s: status %d, want 202, 200 or 409", id, addr, st)
				return false
			}
		}
		if attempt == 50 {
			t.Errorf("%s: no 202 or 200 after %d tries", id, attempt)
			return false
		}
		time.Sleep(10 * time.Millisecond) // a provider's retry, shortened
	}
}

// check fails t unless every acknowledged event is stored and no event is
// stored twice.
func (res *burstResult) check(t *testing.T, stored map[string]int) {
	t.Helper()
	for id, n := range stored {
		if n > 1 {
			t.Errorf("event %s stored %d times", id, n)
		}
	}
	for id := range res.acked {
		if stored[id] == 0 {
			t.Errorf("event %s was acknowledged but is not stored", id)
		}
	}
}

// checkAcceptedOnce fails t when an event got more than one 202, from any
// nodes (G2).
func (res *burstResult) checkAcceptedOnce(t *testing.T) {
	t.Helper()
	for id, n := range res.accepted {
		if n > 1 {
			t.Errorf("event %s accepted (202) %d times", id, n)
		}
	}
}

// storedEvents lists the events of store: event id -> rows.
func storedEvents(t *testing.T, store inbox.Backend) map[string]int {
	t.Helper()
	stored := map[string]int{}
	eachStored(t, store, func(e inbox.Event) { stored[e.EventID]++ })
	return stored
}

// storedRows counts the events of store.
func storedRows(t *testing.T, store inbox.Backend) int {
	t.Helper()
	n := 0
	eachStored(t, store, func(inbox.Event) { n++ })
	return n
}

// eachStored calls f with every event of store, newest first.
func eachStored(t *testing.T, store inbox.Backend, f func(inbox.Event)) {
	t.Helper()
	for before := int64(0); ; {
		page, err := store.List(t.Context(), inbox.Filter{BeforeID: before, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			return
		}
		for _, e := range page {
			f(e)
		}
		before = page[len(page)-1].ID
	}
}
