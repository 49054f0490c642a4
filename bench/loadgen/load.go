package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// config is what one load run does.
type config struct {
	url      string
	secret   string
	conns    int
	duration time.Duration
	warmup   time.Duration
	timeout  time.Duration
	dup      float64
	size     int
	label    string
	idPrefix string
	replay   int
	// stamp puts the send time and entity fields into each body
	// (stampedBody).
	stamp bool
	// rate paces the requests of all connections together to this many
	// per second; 0 sends as fast as the connections allow.
	rate float64
	// count stops the run after this many requests; 0 runs for the
	// duration.
	count int
	// newConns opens a new connection for each request, as senders that
	// do not keep connections alive do.
	newConns bool
}

// urls are the receivers in c.url, which lists one or more, separated by
// commas.
func (c config) urls() []string { return strings.Split(c.url, ",") }

func (c config) check() error {
	for _, raw := range c.urls() {
		u, err := url.Parse(raw)
		if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: -url %q: want an http(s) URL, or several separated by commas", errUsage, c.url)
		}
	}
	switch {
	case c.secret == "":
		return fmt.Errorf("%w: -secret is required", errUsage)
	case c.conns < 1:
		return fmt.Errorf("%w: -c %d: want at least 1", errUsage, c.conns)
	case c.duration <= 0:
		return fmt.Errorf("%w: -d %s: want more than 0", errUsage, c.duration)
	case c.warmup < 0:
		return fmt.Errorf("%w: -warmup %s: want 0 or more", errUsage, c.warmup)
	case c.timeout <= 0:
		return fmt.Errorf("%w: -timeout %s: want more than 0", errUsage, c.timeout)
	case c.dup < 0 || c.dup > 1:
		return fmt.Errorf("%w: -dup %g: want 0..1", errUsage, c.dup)
	case c.size < 0:
		return fmt.Errorf("%w: -size %d: want 0 or more", errUsage, c.size)
	case c.replay < 0:
		return fmt.Errorf("%w: -replay %d: want 0 or more", errUsage, c.replay)
	case c.rate < 0:
		return fmt.Errorf("%w: -rate %g: want 0 or more", errUsage, c.rate)
	case c.count < 0:
		return fmt.Errorf("%w: -n %d: want 0 or more", errUsage, c.count)
	}
	return nil
}

// Phases of a run: requests completing in phaseMeasure are measured.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// shared is the state the workers of one run share.
type shared struct {
	cfg    config
	signer *verify.Standard
	phase  atomic.Int32
	// next is the number of the next new id.
	next atomic.Uint64
	// stored holds the numbers of ids whose first send was answered 202
	// or 200: the ids that can be redelivered.
	stored idPool
	// tickets numbers the requests of the run in the order they are
	// started: -n and -rate count them.
	tickets atomic.Uint64
	// pace spaces the tickets by -rate.
	pace pacer
	// stop is closed when the run ends, so that workers waiting for
	// their turn under -rate return.
	stop chan struct{}
}

// load runs cfg: warmup, then the measured duration (cut short when -n
// requests have completed), then it waits for the requests in flight and
// sums up what the workers measured.
func load(ctx context.Context, cfg config) (*result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	signer, err := verify.NewStandard(cfg.secret)
	if err != nil {
		return nil, fmt.Errorf("-secret: %w", err)
	}
	sh := &shared{cfg: cfg, signer: signer, pace: newPacer(time.Now(), cfg.rate), stop: make(chan struct{})}
	workers := make([]*worker, cfg.conns)
	var wg sync.WaitGroup
	for i := range workers {
		w := newWorker(sh, uint64(i))
		workers[i] = w
		wg.Go(w.loop)
	}
	// finished is closed when every worker has returned, which before the
	// end of the duration happens only when -n requests were sent.
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	if cfg.warmup > 0 {
		wait(ctx, finished, cfg.warmup)
	}
	sh.phase.Store(phaseMeasure)
	start := time.Now()
	wait(ctx, finished, cfg.duration)
	sh.phase.Store(phaseStop)
	elapsed := time.Since(start)
	close(sh.stop)
	<-finished
	for _, w := range workers {
		w.transport.CloseIdleConnections()
	}
	return summarize(cfg.label, elapsed, sh.next.Load(), workers), nil
}

// wait returns after d, when ctx ends or when done is closed, whichever
// is first.
func wait(ctx context.Context, done <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-done:
	}
}

// pacer spaces requests evenly: request k (0, 1, ...) of a run is due at
// start + k/rate. A request that falls behind its time is sent at once, so
// a receiver slower than the rate sees the connections' full load.
type pacer struct {
	start    time.Time
	interval float64 // nanoseconds between requests; 0: no pacing
}

func newPacer(start time.Time, rate float64) pacer {
	if rate <= 0 {
		return pacer{start: start}
	}
	return pacer{start: start, interval: float64(time.Second) / rate}
}

// due is the time request k may be sent.
func (p pacer) due(k uint64) time.Time {
	return p.start.Add(time.Duration(float64(k) * p.interval))
}

// worker sends one request at a time on its own keep-alive connection.
type worker struct {
	sh        *shared
	url       string // the receiver of this connection
	transport *http.Transport
	client    *http.Client
	rng       *rand.Rand
	samples   samples
}

func newWorker(sh *shared, n uint64) *worker {
	t := &http.Transport{
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		MaxIdleConns:        1,
		DisableCompression:  true,
		DisableKeepAlives:   sh.cfg.newConns,
	}
	urls := sh.cfg.urls()
	return &worker{
		sh:        sh,
		url:       urls[n%uint64(len(urls))],
		transport: t,
		client:    &http.Client{Transport: t, Timeout: sh.cfg.timeout},
		rng:       rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), n)),
	}
}

func (w *worker) loop() {
	for w.sh.phase.Load() != phaseStop {
		if !w.turn() {
			return
		}
		n, redelivery := w.pick()
		status, latency, err := w.send(n)
		if !redelivery && (status == http.StatusAccepted || status == http.StatusOK) {
			w.sh.stored.add(n)
		}
		if w.sh.phase.Load() == phaseMeasure {
			w.samples.add(redelivery, status, latency, err)
		}
	}
}

// turn takes the next request's ticket and waits until the request is
// due. It returns false when the run is over: -n requests were started or
// the run stopped while waiting.
func (w *worker) turn() bool {
	k := w.sh.tickets.Add(1) - 1
	if n := w.sh.cfg.count; n > 0 && k >= uint64(n) {
		return false
	}
	if w.sh.pace.interval == 0 {
		return true
	}
	d := time.Until(w.sh.pace.due(k))
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.sh.stop:
		return false
	}
}

// pick chooses the id of the next request: a redelivery of a stored id
// with probability -dup (always with -replay), else the next new id.
func (w *worker) pick() (n uint64, redelivery bool) {
	cfg := &w.sh.cfg
	if cfg.replay > 0 {
		return w.rng.Uint64N(uint64(cfg.replay)), true
	}
	if cfg.dup > 0 && w.rng.Float64() < cfg.dup {
		if n, ok := w.sh.stored.pick(w.rng); ok {
			return n, true
		}
	}
	return w.sh.next.Add(1) - 1, false
}

// send delivers event n, freshly signed, and reads the whole response.
func (w *worker) send(n uint64) (status int, latency time.Duration, err error) {
	id := eventID(w.sh.cfg.idPrefix, n)
	var body []byte
	if w.sh.cfg.stamp {
		body = stampedBody(id, n, time.Now(), w.sh.cfg.size)
	} else {
		body = eventBody(id, w.sh.cfg.size)
	}
	req, err := http.NewRequest(http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(verify.HeaderWebhookID, id)
	if err := w.sh.signer.Sign(req, body); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, time.Since(start), err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(start), err
}

// eventID is the webhook-id of event n.
func eventID(prefix string, n uint64) string {
	return prefix + "-" + strconv.FormatUint(n, 10)
}

// eventBody is a JSON event for id, padded to size bytes; it is never
// shorter than the JSON without padding. The same id always gives the same
// body, as a provider's redelivery does.
func eventBody(id string, size int) []byte {
	const head, mid, tail = `{"type":"bench.event","id":"`, `","pad":"`, `"}`
	pad := max(size-len(head)-len(id)-len(mid)-len(tail), 0)
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(head)
	b.WriteString(id)
	b.WriteString(mid)
	b.WriteString(strings.Repeat("x", pad))
	b.WriteString(tail)
	return b.Bytes()
}

// Entity fields of stamped bodies: event n is about order "o-(n mod
// stampOrders)", at sequence n, in state stampStates[(n / stampOrders) mod 4],
// so successive events of an order advance its version and change its state.
const stampOrders = 100

var stampStates = [...]string{"pending", "paid", "shipped", "refunded"}

// stampedBody is like eventBody with the fields a processing benchmark
// reads: "sent_ns", the Unix time in nanoseconds of sent, and the entity
// fields "order", "seq" and "state" of event n. The padding shrinks by
// what they add, so the size is the same as eventBody's. A redelivery
// carries the time of its own send.
func stampedBody(id string, n uint64, sent time.Time, size int) []byte {
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"type":"bench.event","id":"`)
	b.WriteString(id)
	b.WriteString(`","sent_ns":`)
	b.WriteString(strconv.FormatInt(sent.UnixNano(), 10))
	b.WriteString(`,"order":"o-`)
	b.WriteString(strconv.FormatUint(n%stampOrders, 10))
	b.WriteString(`","seq":`)
	b.WriteString(strconv.FormatUint(n, 10))
	b.WriteString(`,"state":"`)
	b.WriteString(stampStates[n/stampOrders%uint64(len(stampStates))])
	b.WriteString(`","pad":"`)
	const tail = `"}`
	b.WriteString(strings.Repeat("x", max(size-b.Len()-len(tail), 0)))
	b.WriteString(tail)
	return b.Bytes()
}

// idPool is the set of event numbers that can be redelivered.
type idPool struct {
	mu  sync.Mutex
	ids []uint64
}

func (p *idPool) add(n uint64) {
	p.mu.Lock()
	p.ids = append(p.ids, n)
	p.mu.Unlock()
}

// pick returns a uniformly chosen member, and false when the pool is empty.
func (p *idPool) pick(rng *rand.Rand) (uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ids) == 0 {
		return 0, false
	}
	return p.ids[rng.IntN(len(p.ids))], true
}
