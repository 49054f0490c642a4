package redis_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/dedupe/redis"
	"github.com/hookgate/hookgate/dedupe/redis/redistest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	lease  = 30 * time.Second
	window = time.Hour
)

// TestConformance runs the suite with the stores on the suite's manual
// clock, so the expiry cases run too: the scripts judge expiry by the
// times the clock gives.
func TestConformance(t *testing.T) {
	t.Parallel()
	dedupetest.Exercise(t, func(t *testing.T, clock *dedupetest.Clock) dedupe.Store {
		client, prefix := redistest.New(t)
		s, err := redis.New(client, redis.Options{Prefix: prefix, Now: clock.Now, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, dedupetest.Features{})
}

// TestConformanceRedisClock runs the suite with the stores on Redis's own
// clock, as a gateway runs them; expiry on that clock is TestRedisClockExpiry's.
func TestConformanceRedisClock(t *testing.T) {
	t.Parallel()
	dedupetest.Exercise(t, func(t *testing.T, _ *dedupetest.Clock) dedupe.Store {
		return setup(t)
	}, dedupetest.Features{NoManualClock: true})
}

// setup returns a store on Redis's clock with a prefix of its own.
func setup(t testing.TB) *redis.Store {
	t.Helper()
	client, prefix := redistest.New(t)
	s, err := redis.New(client, redis.Options{Prefix: prefix, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hash(i int) dedupe.Hash {
	return dedupe.Key{Tenant: "acme", Provider: "redistest", ObjectType: "event", Action: "created", EventID: strconv.Itoa(i)}.Hash()
}

func hashes(from, to int) []dedupe.Hash {
	hs := make([]dedupe.Hash, 0, to-from)
	for i := from; i < to; i++ {
		hs = append(hs, hash(i))
	}
	return hs
}

func claimFor(t *testing.T, s dedupe.Store, d time.Duration, h dedupe.Hash) dedupe.Result {
	t.Helper()
	r, err := dedupe.ClaimOne(t.Context(), s, d, h)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return r
}

// waitNew claims h with the default lease until it is New, which must
// happen before timeout.
func waitNew(t *testing.T, s dedupe.Store, h dedupe.Hash, timeout time.Duration) dedupe.Result {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := claimFor(t, s, lease, h)
		if r.Status == dedupe.New {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("key still %s %v after it should have expired", r.Status, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRedisClockExpiry: on Redis's clock a lease and a window end when
// Redis expires the key (PX): nobody sweeps.
func TestRedisClockExpiry(t *testing.T) {
	t.Parallel()
	s := setup(t)
	client, _ := redistest.New(t)
	const short = 200 * time.Millisecond

	crashed := claimFor(t, s, short, hash(1))
	if crashed.Status != dedupe.New {
		t.Fatalf("fresh key = %s", crashed.Status)
	}
	ttl, err := client.PTTL(t.Context(), s.Key(hash(1))).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 || ttl > short {
		t.Fatalf("leased key's PTTL = %v, want in (0, %v]", ttl, short)
	}
	if got := crashed.Expires.Sub(crashed.FirstSeen); got != short {
		t.Errorf("lease reported from %v to %v (%v), want %v", crashed.FirstSeen, crashed.Expires, got, short)
	}
	if r := claimFor(t, s, lease, hash(1)); r.Status != dedupe.InFlight {
		t.Fatalf("leased key = %s, want in-flight", r.Status)
	}
	owner := waitNew(t, s, hash(1), 10*time.Second)
	if err := s.Commit(t.Context(), window, crashed.Lease); !errors.Is(err, dedupe.ErrLeaseLost) {
		t.Fatalf("commit of the expired lease: %v, want ErrLeaseLost", err)
	}

	if err := s.Commit(t.Context(), short, owner.Lease); err != nil {
		t.Fatal(err)
	}
	if r := claimFor(t, s, lease, hash(1)); r.Status != dedupe.Duplicate {
		t.Fatalf("committed key = %s, want duplicate", r.Status)
	}
	waitNew(t, s, hash(1), 10*time.Second)
	if n, err := s.Sweep(t.Context()); n != 0 || err != nil {
		t.Fatalf("Sweep on Redis's clock = %d, %v; want 0, nil", n, err)
	}
}

// TestPrefixes: stores with one prefix share their keys (the nodes of one
// gateway); stores with another never see them.
func TestPrefixes(t *testing.T) {
	t.Parallel()
	client, prefix := redistest.New(t)
	open := func(prefix string) *redis.Store {
		s, err := redis.New(client, redis.Options{Prefix: prefix, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b, other := open(prefix), open(prefix), open(prefix+"_other")
	h := hash(1)
	r := claimFor(t, a, lease, h)
	if r.Status != dedupe.New {
		t.Fatalf("first claim = %s", r.Status)
	}
	if got := claimFor(t, b, lease, h).Status; got != dedupe.InFlight {
		t.Fatalf("same prefix, claim held by the other store = %s, want in-flight", got)
	}
	if got := claimFor(t, other, lease, h).Status; got != dedupe.New {
		t.Fatalf("other prefix = %s, want new", got)
	}
	if err := a.Commit(t.Context(), window, r.Lease); err != nil {
		t.Fatal(err)
	}
	if got := claimFor(t, b, lease, h).Status; got != dedupe.Duplicate {
		t.Fatalf("same prefix after commit = %s, want duplicate", got)
	}
}

// TestOneSlot: every key of a store carries the prefix as its hash tag,
// so Redis Cluster puts them in one slot and a script may touch a batch.
func TestOneSlot(t *testing.T) {
	t.Parallel()
	client := goredis.NewClient(&goredis.Options{})
	defer client.Close()
	s, err := redis.New(client, redis.Options{Prefix: "gw:eu"})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hashes(0, 10) {
		k := s.Key(h)
		open, end := strings.IndexByte(k, '{'), strings.IndexByte(k, '}')
		if open != 0 || end < 0 || k[open+1:end] != "gw:eu" {
			t.Fatalf("key %q: hash tag is not the prefix", k)
		}
		if !strings.HasSuffix(k, h.String()) {
			t.Fatalf("key %q does not end in the hash %s", k, h)
		}
	}
}

// TestBatchIsOneRoundTrip: a claim, commit or release of 100 keys sends
// one command.
func TestBatchIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	client, prefix := redistest.New(t)
	sent := &countHook{}
	client.AddHook(sent)
	s, err := redis.New(client, redis.Options{Prefix: prefix, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	rs, err := s.Claim(ctx, lease, hashes(0, 100)...)
	if err != nil {
		t.Fatal(err)
	}
	leases := make([]dedupe.Lease, len(rs))
	for i, r := range rs {
		leases[i] = r.Lease
	}
	if err := s.Commit(ctx, window, leases[:50]...); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, leases[50:]...); err != nil {
		t.Fatal(err)
	}
	// The first call of each script may meet NOSCRIPT and send it whole.
	if n := sent.commands.Load(); n > 6 {
		t.Fatalf("claim, commit and release of 100 keys sent %d commands, want at most 3 (6 loading the scripts)", n)
	}
	sent.commands.Store(0)
	if _, err := s.Claim(ctx, lease, hashes(0, 100)...); err != nil {
		t.Fatal(err)
	}
	if n := sent.commands.Load(); n != 1 {
		t.Fatalf("a claim of 100 keys sent %d commands, want 1", n)
	}
}

// countHook counts the commands a client sends, one per command in a
// pipeline.
type countHook struct{ commands atomic.Int64 }

func (h *countHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *countHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.commands.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.commands.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// TestUnavailable: a Redis that refuses connections, or accepts them and
// never answers, fails every call with ErrUnavailable within the store's
// timeout, even through a client that would wait for ever.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	for name, addr := range map[string]string{"refused": redistest.Refused(t), "silent": redistest.Silent(t)} {
		t.Run(name, func(t *testing.T) {
			s, err := redis.New(redistest.Patient(t, addr), redis.Options{Timeout: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			calls := map[string]func(ctx context.Context) error{
				"claim": func(ctx context.Context) error {
					_, err := s.Claim(ctx, lease, hash(1))
					return err
				},
				"commit":  func(ctx context.Context) error { return s.Commit(ctx, window, dedupe.Lease{Hash: hash(1), Token: 1}) },
				"release": func(ctx context.Context) error { return s.Release(ctx, dedupe.Lease{Hash: hash(1), Token: 1}) },
			}
			for op, call := range calls {
				done := make(chan error, 1)
				go func() { done <- call(t.Context()) }()
				select {
				case err := <-done:
					if !errors.Is(err, dedupe.ErrUnavailable) {
						t.Errorf("%s: err = %v, want ErrUnavailable", op, err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: no answer after 10s with a 50ms timeout", op)
				}
			}
		})
	}
}

// TestCallerCancelled: a call whose caller gave up reports the caller's
// context error, not an outage.
func TestCallerCancelled(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	_, err := s.Claim(ctx, lease, hash(1))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, dedupe.ErrUnavailable) {
		t.Fatalf("claim after the caller's deadline: err = %v, want DeadlineExceeded and not ErrUnavailable", err)
	}
}

func TestOptionsChecked(t *testing.T) {
	t.Parallel()
	client := goredis.NewClient(&goredis.Options{})
	defer client.Close()
	for _, o := range []redis.Options{{Prefix: "a{b"}, {Prefix: "a}"}, {Timeout: -time.Second}} {
		if _, err := redis.New(client, o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	// Redis keeps no expiry under a millisecond; nothing is sent.
	s, err := redis.New(client, redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(t.Context(), time.Microsecond, hash(1)); err == nil || errors.Is(err, dedupe.ErrUnavailable) {
		t.Errorf("claim with a 1µs lease: err = %v, want a refusal", err)
	}
	if err := s.Commit(t.Context(), 0, dedupe.Lease{Hash: hash(1), Token: 1}); err == nil || errors.Is(err, dedupe.ErrUnavailable) {
		t.Errorf("commit with no window: err = %v, want a refusal", err)
	}
}

// TestRecord: the times a durable store gave a key are written whoever
// holds it; its holder's Commit still succeeds and its Release leaves it;
// an expiry in the past writes nothing.
func TestRecord(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond).UTC()
	first, expires := now.Add(-time.Hour), now.Add(time.Hour)

	held := claimFor(t, s, lease, hash(1))
	err := s.Record(ctx,
		redis.Committed{Hash: hash(1), FirstSeen: first, Expires: expires},
		redis.Committed{Hash: hash(2), FirstSeen: first, Expires: expires},
		redis.Committed{Hash: hash(3), FirstSeen: first, Expires: now.Add(-time.Minute)},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []dedupe.Hash{hash(1), hash(2)} {
		r := claimFor(t, s, lease, h)
		if r.Status != dedupe.Duplicate || !r.FirstSeen.Equal(first) || !r.Expires.Equal(expires) {
			t.Fatalf("recorded key = %s %v..%v, want duplicate %v..%v", r.Status, r.FirstSeen, r.Expires, first, expires)
		}
	}
	if err := s.Commit(ctx, window, held.Lease); err != nil {
		t.Fatalf("holder's commit after Record: %v", err)
	}
	if err := s.Release(ctx, held.Lease); err != nil {
		t.Fatal(err)
	}
	if r := claimFor(t, s, lease, hash(1)); r.Status != dedupe.Duplicate || !r.Expires.Equal(expires) {
		t.Fatalf("recorded key after its holder's commit and release = %s until %v, want duplicate until %v", r.Status, r.Expires, expires)
	}
	if r := claimFor(t, s, lease, hash(3)); r.Status != dedupe.New {
		t.Fatalf("key recorded with a past expiry = %s, want new", r.Status)
	}
}

// TestOpen: a store Open made reaches the server at the URL, bounds its
// calls by Options.Timeout through a client of its own, and closes it.
func TestOpen(t *testing.T) {
	t.Parallel()
	_, prefix := redistest.New(t)
	s, err := redis.Open(redistest.URL(), redis.Options{Prefix: prefix, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r := claimFor(t, s, lease, hash(1)); r.Status != dedupe.New {
		t.Fatalf("fresh key = %s", r.Status)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(t.Context(), lease, hash(2)); !errors.Is(err, dedupe.ErrUnavailable) {
		t.Fatalf("claim after Close: %v, want ErrUnavailable", err)
	}
	if _, err := redis.Open("http://127.0.0.1:6379", redis.Options{}); err == nil {
		t.Fatal("Open accepted an http URL")
	}
}
