package worker_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/worker"
	"github.com/hookgate/hookgate/verify"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// clock is a settable test clock; set to the zero time, it is the real
// clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now.IsZero() {
		return time.Now()
	}
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// call is one request a destination received.
type call struct {
	id     string // webhook-id
	header http.Header
	body   string
	sigErr error
}

// dest is a test destination: answer decides the status of its n-th call
// (from 1) and may set headers, or write the answer itself and return 0.
type dest struct {
	URL string

	mu     sync.Mutex
	calls  []call
	answer func(n int, w http.ResponseWriter) int
}

func newDest(t *testing.T, answer func(n int, w http.ResponseWriter) int) *dest {
	t.Helper()
	v, err := verify.NewStandard(secret)
	if err != nil {
		t.Fatal(err)
	}
	d := &dest{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d.mu.Lock()
		d.calls = append(d.calls, call{id: r.Header.Get("webhook-id"), header: r.Header.Clone(), body: string(body), sigErr: v.Verify(r, body)})
		n := len(d.calls)
		d.mu.Unlock()
		code := http.StatusNoContent
		if d.answer != nil {
			code = d.answer(n, w)
		}
		if code != 0 {
			w.WriteHeader(code)
		}
	}))
	t.Cleanup(srv.Close)
	d.URL = srv.URL
	return d
}

func status(code int) func(int, http.ResponseWriter) int {
	return func(int, http.ResponseWriter) int { return code }
}

func (d *dest) Calls() []call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]call(nil), d.calls...)
}

// observer records what the pool reports.
type observer struct {
	mu        sync.Mutex
	delivered map[string]int // "source/dest/outcome"
	dead      map[string]int // "source/reason"
	lost      map[string]int // what
	panicOn   func(source, dest, outcome string) bool
}

func newObserver() *observer {
	return &observer{delivered: map[string]int{}, dead: map[string]int{}, lost: map[string]int{}}
}

func (o *observer) deliveredCount(key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.delivered[key]
}

func (o *observer) Delivered(source, dest, outcome string, _ time.Duration) {
	o.mu.Lock()
	o.delivered[source+"/"+dest+"/"+outcome]++
	panicking := o.panicOn != nil && o.panicOn(source, dest, outcome)
	o.mu.Unlock()
	if panicking {
		panic("observer exploded")
	}
}

func (o *observer) Dead(source, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dead[source+"/"+reason]++
}

func (o *observer) Lost(what string, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lost[what] += n
}

func (o *observer) lostCount(what string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lost[what]
}

func (o *observer) deadCount(key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.dead[key]
}

// bundle is a pool over a fresh SQLite inbox with a test clock.
type bundle struct {
	t     *testing.T
	store *sqlite.Store
	clock *clock
	obs   *observer
	opts  worker.Options
	pool  *worker.Pool
	seq   int
}

var start = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// setup opens an inbox; the pool is built by b.start, after the test has
// adjusted b.opts.
func setup(t *testing.T, sources ...worker.Source) *bundle {
	t.Helper()
	c := &clock{now: start}
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "hookgate.db"), sqlite.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	b := &bundle{t: t, store: s, clock: c, obs: newObserver()}
	srcs := map[string]worker.Source{}
	for _, src := range sources {
		srcs[src.Name] = src
	}
	b.opts = worker.Options{
		Store: s, Sources: srcs, Workers: 1, Batch: 200,
		Client: deliver.New(&http.Client{Transport: tr}),
		Now:    c.Now, Rand: func() float64 { return 0.5 },
		Observer: b.obs,
	}
	return b
}

func (b *bundle) start() *worker.Pool {
	b.t.Helper()
	p, err := worker.New(b.opts)
	if err != nil {
		b.t.Fatal(err)
	}
	b.pool = p
	return p
}

// run builds the pool and runs it until the test ends.
func (b *bundle) run() *worker.Pool {
	b.t.Helper()
	p := b.start()
	ctx, cancel := context.WithCancel(b.t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	b.t.Cleanup(func() {
		cancel()
		<-done
	})
	return p
}

// event is a stored event of source "shop" about order id, at version
// order in state.
func event(id string, order int64, state string) inbox.Event {
	return inbox.Event{
		Source: "shop", Provider: "standard", Tenant: "acme",
		EntityType: "order", EntityID: id, EntityVersion: fmt.Sprint(order), EntityOrder: order, EntityState: state,
		Payload: []byte(fmt.Sprintf(`{"order":%q,"state":%q,"version":%d}`, id, state, order)),
	}
}

// add stores events (their EventID, Hash and Scope are filled in) and
// returns their ids.
func (b *bundle) add(events ...inbox.Event) []int64 {
	b.t.Helper()
	items := make([]inbox.Item, len(events))
	for i, ev := range events {
		b.seq++
		if ev.EventID == "" {
			ev.EventID = fmt.Sprintf("evt_%d", b.seq)
		}
		k := dedupe.Key{Tenant: ev.Tenant, Provider: ev.Provider, ObjectType: ev.EntityType, Action: "updated", EventID: ev.EventID}
		ev.Hash, ev.Scope = k.Hash(), k.Scope()
		items[i] = inbox.Item{Event: ev, Window: 168 * time.Hour}
	}
	out, err := b.store.Accept(context.Background(), items)
	if err != nil {
		b.t.Fatal(err)
	}
	ids := make([]int64, len(out))
	for i, o := range out {
		if o.Status != dedupe.New {
			b.t.Fatalf("item %d: %v, want new", i, o.Status)
		}
		ids[i] = o.ID
	}
	return ids
}

// once runs one batch and the deliveries then due, and says how many
// events it leased and deliveries it made.
func (b *bundle) once() worker.Round {
	b.t.Helper()
	r, err := b.pool.ProcessOnce(context.Background())
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

// delivery returns the record of event id's delivery to dest.
func (b *bundle) delivery(id int64, dest string) inbox.Delivery {
	b.t.Helper()
	ds, err := b.store.Deliveries(context.Background(), []int64{id})
	if err != nil {
		b.t.Fatal(err)
	}
	d, ok := ds[id][dest]
	if !ok {
		b.t.Fatalf("event %d has no delivery to %s", id, dest)
	}
	return d
}

func (b *bundle) get(id int64) inbox.Event {
	b.t.Helper()
	ev, err := b.store.Get(context.Background(), id)
	if err != nil {
		b.t.Fatal(err)
	}
	return ev
}

// wantStatus checks the event's status and returns the event.
func (b *bundle) wantStatus(id int64, want inbox.Status) inbox.Event {
	b.t.Helper()
	ev := b.get(id)
	if ev.Status != want {
		b.t.Fatalf("event %d: status %s (%q), want %s", id, ev.Status, ev.LastError, want)
	}
	return ev
}

func destination(name string, d *dest, on string, maxAttempts int) worker.Destination {
	return worker.Destination{
		Destination: deliver.Destination{Name: name, URL: d.URL, Timeout: 10 * time.Second},
		On:          on, MaxAttempts: maxAttempts,
	}
}
