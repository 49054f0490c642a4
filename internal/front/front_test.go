package front

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/dedupe/redis/redistest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func hash(i int) dedupe.Hash {
	return dedupe.Key{Tenant: "acme", Provider: "fronttest", EventID: strconv.Itoa(i)}.Hash()
}

// node returns a front on the test server under prefix, as one gateway
// node runs it, with a timeout generous enough for a loaded machine.
func node(t testing.TB, client *goredis.Client, prefix string) *Front {
	t.Helper()
	f, err := New(client, Options{Prefix: prefix, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func verdicts(as []Answer) []Verdict {
	vs := make([]Verdict, len(as))
	for i, a := range as {
		vs[i] = a.Verdict
	}
	return vs
}

func wantVerdicts(t *testing.T, as []Answer, want ...Verdict) {
	t.Helper()
	got := verdicts(as)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("verdicts %v, want %v", got, want)
		}
	}
}

// TestNodes: what one node claims another sees in flight; what one node
// committed another answers duplicate from Redis, with the inbox's times;
// what one node released another claims.
func TestNodes(t *testing.T) {
	t.Parallel()
	client, prefix := redistest.New(t)
	a, b := node(t, client, prefix), node(t, client, prefix)
	ctx := t.Context()

	claimed := a.Check(ctx, []dedupe.Hash{hash(1), hash(2)})
	wantVerdicts(t, claimed, Claimed, Claimed)
	held := b.Check(ctx, []dedupe.Hash{hash(1)})
	wantVerdicts(t, held, InFlightElsewhere)
	if d := held[0].Expires.Sub(held[0].FirstSeen); d != DefaultLease {
		t.Errorf("in flight from %v to %v, want a lease of %v", held[0].FirstSeen, held[0].Expires, DefaultLease)
	}

	first := time.Now().Add(-time.Minute).Truncate(time.Millisecond).UTC()
	expires := first.Add(168 * time.Hour)
	if err := a.Commit(ctx, Committed{Hash: hash(1), FirstSeen: first, Expires: expires}); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, claimed[1].Lease); err != nil {
		t.Fatal(err)
	}
	again := b.Check(ctx, []dedupe.Hash{hash(1), hash(2)})
	wantVerdicts(t, again, Duplicate, Claimed)
	if !again[0].FirstSeen.Equal(first) || !again[0].Expires.Equal(expires) {
		t.Errorf("duplicate %v..%v, want the inbox's %v..%v", again[0].FirstSeen, again[0].Expires, first, expires)
	}
}

// TestRacingNodes: 100 copies of one event checked at once on two nodes,
// each with its own connections: one is Claimed, the others are in flight
// elsewhere.
func TestRacingNodes(t *testing.T) {
	t.Parallel()
	const copies = 100
	client, prefix := redistest.New(t)
	other, _ := redistest.New(t)
	nodes := []*Front{node(t, client, prefix), node(t, other, prefix)}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		counts  = map[Verdict]int{}
		startCh = make(chan struct{})
	)
	for i := range copies {
		wg.Go(func() {
			<-startCh
			v := nodes[i%2].Check(t.Context(), []dedupe.Hash{hash(1)})[0].Verdict
			mu.Lock()
			counts[v]++
			mu.Unlock()
		})
	}
	close(startCh)
	wg.Wait()
	if counts[Claimed] != 1 || counts[InFlightElsewhere] != copies-1 {
		t.Fatalf("%d racing copies: %v, want 1 claimed and the rest in flight elsewhere", copies, counts)
	}
}

// inbox stands for the inbox's unique key, the arbiter behind the front.
type inbox struct {
	mu       sync.Mutex
	stored   map[dedupe.Hash]time.Time
	accepted map[dedupe.Hash]int
	asked    atomic.Int64
}

// accept stores h unless it is there and reports whether it was new and
// when it was first seen.
func (in *inbox) accept(h dedupe.Hash) (bool, time.Time) {
	in.asked.Add(1)
	in.mu.Lock()
	defer in.mu.Unlock()
	if first, ok := in.stored[h]; ok {
		return false, first
	}
	first := time.Now().Truncate(time.Millisecond).UTC()
	in.stored[h] = first
	in.accepted[h]++
	return true, first
}

// deliver handles one delivery of h on front f as the package doc tells
// intake to: the front's Duplicate and InFlightElsewhere are answered
// without the inbox; Claimed and Unknown go to the inbox, and what it
// decided is committed to the front.
func deliver(ctx context.Context, f *Front, in *inbox, h dedupe.Hash) Verdict {
	a := f.Check(ctx, []dedupe.Hash{h})[0]
	switch a.Verdict {
	case Duplicate, InFlightElsewhere:
		return a.Verdict
	}
	_, first := in.accept(h)
	f.Commit(ctx, Committed{Hash: h, FirstSeen: first, Expires: first.Add(168 * time.Hour)})
	return a.Verdict
}

// flush deletes every key under prefix: what FLUSHALL does to a gateway's
// keys, without wiping the keys of other tests on the shared server.
func flush(t *testing.T, client *goredis.Client, prefix string) {
	t.Helper()
	ctx := t.Context()
	iter := client.Scan(ctx, 0, "{"+prefix+"}*", 1000).Iterator()
	for iter.Next(ctx) {
		if err := client.Del(ctx, iter.Val()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestFlushCannotDoubleAccept: two nodes receive every event three times
// from racing senders, and Redis loses all its keys midway; the inbox's
// unique key still accepts each event once, and what it found duplicate
// is committed to Redis again, so the next copies are answered from Redis.
func TestFlushCannotDoubleAccept(t *testing.T) {
	t.Parallel()
	const (
		events  = 200
		copies  = 3
		senders = 8
	)
	client, prefix := redistest.New(t)
	other, _ := redistest.New(t)
	nodes := []*Front{node(t, client, prefix), node(t, other, prefix)}
	in := &inbox{stored: map[dedupe.Hash]time.Time{}, accepted: map[dedupe.Hash]int{}}
	ctx := t.Context()

	var sends []int
	for i := range events {
		for range copies {
			sends = append(sends, i)
		}
	}
	rand.Shuffle(len(sends), func(i, j int) { sends[i], sends[j] = sends[j], sends[i] })
	half := len(sends) / 2
	send := func(batch []int) {
		var wg sync.WaitGroup
		for s := range senders {
			wg.Go(func() {
				for k := s; k < len(batch); k += senders {
					deliver(ctx, nodes[rand.IntN(len(nodes))], in, hash(batch[k]))
				}
			})
		}
		wg.Wait()
	}
	send(sends[:half])
	flush(t, client, prefix)
	send(sends[half:])

	for i := range events {
		if n := in.accepted[hash(i)]; n != 1 {
			t.Errorf("event %d accepted %d times", i, n)
		}
	}
	// An event sent after the flush was committed to Redis again, by its
	// accept or by the inbox finding it duplicate: its next copy is
	// answered from Redis. One sent only before the flush is found in the
	// inbox once more, and from then on answered from Redis.
	after := map[int]bool{}
	for _, i := range sends[half:] {
		after[i] = true
	}
	for i := range events {
		before := in.asked.Load()
		v := deliver(ctx, nodes[i%2], in, hash(i))
		if after[i] && v != Duplicate {
			t.Fatalf("event %d, redelivered after the flush: front answered %s, want duplicate", i, v)
		}
		if v := deliver(ctx, nodes[(i+1)%2], in, hash(i)); v != Duplicate {
			t.Fatalf("event %d, after the inbox found it duplicate: front answered %s, want duplicate", i, v)
		}
		if asked, want := in.asked.Load()-before, map[bool]int64{true: 0, false: 1}[after[i]]; asked != want {
			t.Fatalf("event %d: the inbox was asked %d times, want %d", i, asked, want)
		}
	}
	for i := range events {
		if n := in.accepted[hash(i)]; n != 1 {
			t.Errorf("event %d accepted %d times after the last copies", i, n)
		}
	}
}

// proxy stands between a front and Redis: it passes connections through,
// or accepts them and never answers.
type proxy struct {
	ln     net.Listener
	target string
	silent atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newProxy(t *testing.T) *proxy {
	t.Helper()
	opts, err := goredis.ParseURL(redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: opts.Addr}
	p.wg.Go(p.serve)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(c)
		if p.silent.Load() {
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.track(up)
		p.wg.Go(func() {
			io.Copy(up, c)
			up.Close()
		})
		p.wg.Go(func() {
			io.Copy(c, up)
			c.Close()
		})
	}
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// cut closes every connection, so the front's next call dials again.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// outageFront returns a front on addr with a short timeout, on clock, and
// the buffer its log lines go to. Its client would wait for ever on its
// own.
func outageFront(t *testing.T, addr, prefix string, clock *dedupetest.Clock) (*Front, *bytes.Buffer) {
	t.Helper()
	logs := &bytes.Buffer{}
	f, err := New(redistest.Patient(t, addr), Options{
		Prefix: prefix, Timeout: 300 * time.Millisecond, RetryAfter: time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.now = clock.Now
	return f, logs
}

// wantLogged checks that logs hold want lines of msg.
func wantLogged(t *testing.T, logs *bytes.Buffer, msg string, want int) {
	t.Helper()
	if n := strings.Count(logs.String(), msg); n != want {
		t.Errorf("%q logged %d times, want %d:\n%s", msg, n, want, logs)
	}
}

// checkBounded runs f.Check and fails the test if it does not return
// within a bound far beyond the front's timeout.
func checkBounded(t *testing.T, f *Front, hs ...dedupe.Hash) []Answer {
	t.Helper()
	done := make(chan []Answer, 1)
	go func() { done <- f.Check(t.Context(), hs) }()
	select {
	case as := <-done:
		return as
	case <-time.After(10 * time.Second):
		t.Fatalf("Check did not return in 10s with a timeout of 300ms")
		return nil
	}
}

// TestOutage: a Redis that accepts connections and never answers makes
// every answer Unknown within the timeout; the outage is logged once and
// counted, later calls bypass Redis until RetryAfter has passed, and when
// Redis answers again the front is used again.
func TestOutage(t *testing.T) {
	t.Parallel()
	_, prefix := redistest.New(t)
	p := newProxy(t)
	clock := dedupetest.NewClock(time.Now())
	f, logs := outageFront(t, p.ln.Addr().String(), prefix, clock)

	wantVerdicts(t, checkBounded(t, f, hash(1)), Claimed)
	p.silent.Store(true)
	p.cut()

	const probes = 5
	for range probes {
		wantVerdicts(t, checkBounded(t, f, hash(2), hash(3)), Unknown, Unknown)
		// Within RetryAfter the front does not try Redis at all.
		wantVerdicts(t, checkBounded(t, f, hash(2)), Unknown)
		if err := f.Commit(t.Context(), Committed{Hash: hash(1), FirstSeen: clock.Now(), Expires: clock.Now().Add(time.Hour)}); !errors.Is(err, ErrBypassed) {
			t.Fatalf("Commit during the outage: %v, want ErrBypassed", err)
		}
		clock.Advance(time.Second)
	}
	if got := testutil.ToFloat64(f.failures); got != probes {
		t.Errorf("failures = %v, want %d (one per probe)", got, probes)
	}
	if got := testutil.ToFloat64(f.bypassed); got != 3*probes {
		t.Errorf("bypassed = %v, want %d", got, 3*probes)
	}
	if got := testutil.ToFloat64(f.up); got != 0 {
		t.Errorf("up = %v during the outage", got)
	}
	wantLogged(t, logs, "redis front unavailable", 1)

	p.silent.Store(false)
	p.cut()
	wantVerdicts(t, checkBounded(t, f, hash(1), hash(4)), InFlightElsewhere, Claimed)
	if got := testutil.ToFloat64(f.up); got != 1 {
		t.Errorf("up = %v after Redis answered", got)
	}
	wantLogged(t, logs, "redis front answers again", 1)
}

// TestRefused: a Redis that refuses connections makes every answer
// Unknown and is counted as an outage.
func TestRefused(t *testing.T) {
	t.Parallel()
	f, logs := outageFront(t, redistest.Refused(t), "refused", dedupetest.NewClock(time.Now()))
	wantVerdicts(t, checkBounded(t, f, hash(1), hash(2)), Unknown, Unknown)
	if got := testutil.ToFloat64(f.failures); got != 1 {
		t.Errorf("failures = %v, want 1", got)
	}
	wantLogged(t, logs, "redis front unavailable", 1)
}

// TestCallerGaveUp: a request whose context ended gets Unknown, and that
// is no outage.
func TestCallerGaveUp(t *testing.T) {
	t.Parallel()
	client, prefix := redistest.New(t)
	f := node(t, client, prefix)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	wantVerdicts(t, f.Check(ctx, []dedupe.Hash{hash(1)}), Unknown)
	if got := testutil.ToFloat64(f.failures); got != 0 {
		t.Errorf("failures = %v after a cancelled request", got)
	}
	wantVerdicts(t, f.Check(t.Context(), []dedupe.Hash{hash(1)}), Claimed)
}

// TestOpen: a front Open made answers from the server at the URL.
func TestOpen(t *testing.T) {
	t.Parallel()
	_, prefix := redistest.New(t)
	f, err := Open(redistest.URL(), Options{Prefix: prefix, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	wantVerdicts(t, f.Check(t.Context(), []dedupe.Hash{hash(1)}), Claimed)
	if _, err := Open(redistest.URL(), Options{Lease: -time.Second}); err == nil {
		t.Fatal("Open accepted a negative lease")
	}
}
