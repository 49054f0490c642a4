package dedupetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
)

// Features declares what a store cannot do; a case it skips says so with
// t.Skip("store lacks ...").
type Features struct {
	// NoManualClock means the store takes time from its server (Redis TTL)
	// and cannot follow the suite's Clock: cases that need expiry skip, and
	// times the store reports are compared with each other within
	// serverTimeSlack instead of exactly with the clock.
	NoManualClock bool
}

// Factory returns a fresh, empty store that reads time from clock.Now.
// It registers whatever cleanup the store needs with t.
type Factory func(t *testing.T, clock *Clock) dedupe.Store

const (
	// lease and window are the defaults the cases claim and commit with;
	// whole seconds, so stores that keep seconds compare exactly.
	lease  = 30 * time.Second
	window = time.Hour
	// serverTimeSlack is how far apart two reports of one instant may be
	// when the store keeps time on its server at a coarser precision.
	serverTimeSlack = time.Second
)

// start is where every case's clock begins: a whole second, far from the
// zero time and from the real clock.
var start = time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)

// Exercise runs the conformance suite against the stores newStore opens.
// Every case is a parallel subtest with its own store and clock.
func Exercise(t *testing.T, newStore Factory, features Features) {
	t.Helper()
	cases := []struct {
		name string
		run  func(*bundle)
	}{
		{"SequentialDuplicate", testSequentialDuplicate},
		{"ConcurrentClaimOneKey", testConcurrentClaimOneKey},
		{"ScopesAndTenantsDistinct", testScopesAndTenantsDistinct},
		{"FieldBoundaries", testFieldBoundaries},
		{"ReleaseThenClaim", testReleaseThenClaim},
		{"CommitUnknownLease", testCommitUnknownLease},
		{"ExpiredLeaseTakeover", testExpiredLeaseTakeover},
		{"InFlight", testInFlight},
		{"CommittedWindow", testCommittedWindow},
		{"CommitIdempotent", testCommitIdempotent},
		{"SweepKeepsLive", testSweepKeepsLive},
		{"SweepRemovesExpired", testSweepRemovesExpired},
		{"EmptyBatch", testEmptyBatch},
		{"BatchClaimDuplicatesInBatch", testBatchClaimDuplicatesInBatch},
		{"BatchCommitRelease", testBatchCommitRelease},
		{"ConcurrentBatchClaims", testConcurrentBatchClaims},
		{"ContextCancelled", testContextCancelled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock := NewClock(start)
			c.run(&bundle{t: t, ctx: t.Context(), store: newStore(t, clock), clock: clock, features: features})
		})
	}
}

// bundle is what every case works with.
type bundle struct {
	t        *testing.T
	ctx      context.Context
	store    dedupe.Store
	clock    *Clock
	features Features
}

// needClock skips a case that has to move the store's time.
func (b *bundle) needClock() {
	b.t.Helper()
	if b.features.NoManualClock {
		b.t.Skip("store lacks a manual clock: expiry is not exercised")
	}
}

// hash returns the hash of the i-th test key.
func hash(i int) dedupe.Hash {
	return dedupe.Key{Tenant: "acme", Provider: "dedupetest", ObjectType: "event", Action: "created", EventID: strconv.Itoa(i)}.Hash()
}

// hashes returns the hashes of test keys from to to-1.
func hashes(from, to int) []dedupe.Hash {
	hs := make([]dedupe.Hash, 0, to-from)
	for i := from; i < to; i++ {
		hs = append(hs, hash(i))
	}
	return hs
}

// checkResults verifies what every Claim answer must satisfy whatever the
// state of the store.
func checkResults(hs []dedupe.Hash, rs []dedupe.Result) error {
	if len(rs) != len(hs) {
		return fmt.Errorf("claim of %d hashes returned %d results", len(hs), len(rs))
	}
	for i, r := range rs {
		switch r.Status {
		case dedupe.New:
			if r.Lease.Hash != hs[i] {
				return fmt.Errorf("result %d: lease for %s, claimed %s", i, r.Lease.Hash, hs[i])
			}
			if r.Lease.Token == 0 {
				return fmt.Errorf("result %d: New with token 0", i)
			}
		case dedupe.Duplicate, dedupe.InFlight:
			if r.Lease != (dedupe.Lease{}) {
				return fmt.Errorf("result %d: %s carries lease %+v", i, r.Status, r.Lease)
			}
		default:
			return fmt.Errorf("result %d: status %s", i, r.Status)
		}
		if r.FirstSeen.IsZero() {
			return fmt.Errorf("result %d: %s with zero FirstSeen", i, r.Status)
		}
		if !r.Expires.After(r.FirstSeen) {
			return fmt.Errorf("result %d: %s expires %v, not after first seen %v", i, r.Status, r.Expires, r.FirstSeen)
		}
	}
	return nil
}

// claimFor claims hs with a lease of d and fails the case on error.
func (b *bundle) claimFor(d time.Duration, hs ...dedupe.Hash) []dedupe.Result {
	b.t.Helper()
	rs, err := b.store.Claim(b.ctx, d, hs...)
	if err != nil {
		b.t.Fatalf("Claim: %v", err)
	}
	if err := checkResults(hs, rs); err != nil {
		b.t.Fatal(err)
	}
	return rs
}

// claim claims hs with the default lease.
func (b *bundle) claim(hs ...dedupe.Hash) []dedupe.Result {
	b.t.Helper()
	return b.claimFor(lease, hs...)
}

// claimWant claims h and fails the case unless the status is want.
func (b *bundle) claimWant(h dedupe.Hash, want dedupe.Status) dedupe.Result {
	b.t.Helper()
	r := b.claim(h)[0]
	if r.Status != want {
		b.t.Fatalf("Claim %s = %s, want %s", h, r.Status, want)
	}
	return r
}

// statuses claims hs in one call and fails the case unless the statuses
// are want, in order.
func (b *bundle) statuses(hs []dedupe.Hash, want ...dedupe.Status) []dedupe.Result {
	b.t.Helper()
	rs := b.claim(hs...)
	for i, r := range rs {
		if r.Status != want[i] {
			b.t.Errorf("Claim result %d (%s) = %s, want %s", i, hs[i], r.Status, want[i])
		}
	}
	if b.t.Failed() {
		b.t.FailNow()
	}
	return rs
}

// commitFor commits leases with a window of d and fails the case on error.
func (b *bundle) commitFor(d time.Duration, leases ...dedupe.Lease) {
	b.t.Helper()
	if err := b.store.Commit(b.ctx, d, leases...); err != nil {
		b.t.Fatalf("Commit: %v", err)
	}
}

// commit commits leases with the default window.
func (b *bundle) commit(leases ...dedupe.Lease) {
	b.t.Helper()
	b.commitFor(window, leases...)
}

// release releases leases and fails the case on error.
func (b *bundle) release(leases ...dedupe.Lease) {
	b.t.Helper()
	if err := b.store.Release(b.ctx, leases...); err != nil {
		b.t.Fatalf("Release: %v", err)
	}
}

// commitLost fails the case unless committing leases fails with
// ErrLeaseLost.
func (b *bundle) commitLost(leases ...dedupe.Lease) {
	b.t.Helper()
	if err := b.store.Commit(b.ctx, window, leases...); !errors.Is(err, dedupe.ErrLeaseLost) {
		b.t.Fatalf("Commit of a lost lease: err = %v, want ErrLeaseLost", err)
	}
}

// sweep sweeps and fails the case unless it removed want entries.
func (b *bundle) sweep(want int) {
	b.t.Helper()
	n, err := b.store.Sweep(b.ctx)
	if err != nil {
		b.t.Fatalf("Sweep: %v", err)
	}
	if n != want {
		b.t.Fatalf("Sweep removed %d entries, want %d", n, want)
	}
}

// wantClockTime checks a time the store reports against the suite's clock.
// A store on server time cannot be checked this way; its cases compare the
// store's reports with each other through wantSameTime instead.
func (b *bundle) wantClockTime(what string, got, want time.Time) {
	b.t.Helper()
	if !b.features.NoManualClock && !got.Equal(want) {
		b.t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// wantSameTime checks that two reports of one instant by the store agree.
func (b *bundle) wantSameTime(what string, got, want time.Time) {
	b.t.Helper()
	if b.features.NoManualClock {
		if d := got.Sub(want).Abs(); d > serverTimeSlack {
			b.t.Errorf("%s = %v, want %v (within %v)", what, got, want, serverTimeSlack)
		}
		return
	}
	if !got.Equal(want) {
		b.t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func testSequentialDuplicate(b *bundle) {
	h := hash(1)
	t0 := b.clock.Now()
	first := b.claimWant(h, dedupe.New)
	b.wantClockTime("New FirstSeen", first.FirstSeen, t0)
	b.wantClockTime("New Expires", first.Expires, t0.Add(lease))

	b.clock.Advance(5 * time.Second)
	committedAt := b.clock.Now()
	b.commit(first.Lease)

	for range 2 {
		b.clock.Advance(time.Minute)
		dup := b.claimWant(h, dedupe.Duplicate)
		b.wantSameTime("Duplicate FirstSeen", dup.FirstSeen, first.FirstSeen)
		b.wantClockTime("Duplicate Expires", dup.Expires, committedAt.Add(window))
		if dup.Expires.Before(first.FirstSeen.Add(window)) {
			b.t.Errorf("Duplicate Expires %v: window of %v from first seen %v not honoured", dup.Expires, window, first.FirstSeen)
		}
	}
}

func testConcurrentClaimOneKey(b *bundle) {
	const workers = 100
	h := hash(1)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		counts  = map[dedupe.Status]int{}
		startCh = make(chan struct{})
	)
	for range workers {
		wg.Go(func() {
			<-startCh
			rs, err := b.store.Claim(b.ctx, lease, h)
			if err == nil {
				err = checkResults([]dedupe.Hash{h}, rs)
			}
			if err != nil {
				b.t.Error(err)
				return
			}
			mu.Lock()
			counts[rs[0].Status]++
			mu.Unlock()
		})
	}
	close(startCh)
	wg.Wait()
	if counts[dedupe.New] != 1 || counts[dedupe.InFlight] != workers-1 {
		b.t.Fatalf("%d racing claims of one key: %d New, %d InFlight, %d Duplicate; want 1 New, %d InFlight",
			workers, counts[dedupe.New], counts[dedupe.InFlight], counts[dedupe.Duplicate], workers-1)
	}
}

// field returns a pointer to the i-th field of k in hashing order.
func field(k *dedupe.Key, i int) *string {
	return [...]*string{&k.Tenant, &k.Provider, &k.ObjectType, &k.Action, &k.EventID}[i]
}

const keyFields = 5

func testScopesAndTenantsDistinct(b *bundle) {
	base := dedupe.Key{Tenant: "acme", Provider: "stripe", ObjectType: "charge", Action: "succeeded", EventID: "evt_1"}
	b.commit(b.claimWant(base.Hash(), dedupe.New).Lease)

	seen := map[dedupe.Hash]string{base.Hash(): base.String()}
	for i := range keyFields {
		for _, v := range []string{"other", ""} {
			k := base
			*field(&k, i) = v
			h := k.Hash()
			if prev, dup := seen[h]; dup {
				b.t.Fatalf("keys %q and %q hash alike", prev, k.String())
			}
			seen[h] = k.String()
			if r := b.claim(h)[0]; r.Status != dedupe.New {
				b.t.Errorf("key %q (field %d of %q changed) = %s, want New", k.String(), i, base.String(), r.Status)
			}
		}
	}
	b.claimWant(base.Hash(), dedupe.Duplicate)
}

func testFieldBoundaries(b *bundle) {
	for i := range keyFields - 1 {
		for _, split := range [][2][2]string{
			{{"ab", "c"}, {"a", "bc"}},
			{{"abc", ""}, {"", "abc"}},
		} {
			var x, y dedupe.Key
			*field(&x, i), *field(&x, i+1) = split[0][0], split[0][1]
			*field(&y, i), *field(&y, i+1) = split[1][0], split[1][1]
			if x.Hash() == y.Hash() {
				b.t.Fatalf("fields %d,%d: %q and %q hash alike", i, i+1, x.String(), y.String())
			}
			r := b.claim(x.Hash())[0]
			if r.Status == dedupe.New {
				b.commit(r.Lease)
			}
			if r := b.claim(y.Hash())[0]; r.Status != dedupe.New {
				b.t.Errorf("fields %d,%d: %q after committing %q = %s, want New", i, i+1, y.String(), x.String(), r.Status)
			}
		}
	}
}

func testReleaseThenClaim(b *bundle) {
	h := hash(1)
	first := b.claimWant(h, dedupe.New)
	b.release(first.Lease)

	second := b.claimWant(h, dedupe.New)
	if second.Lease.Token == first.Lease.Token {
		b.t.Fatalf("two claims of one key share token %d", first.Lease.Token)
	}

	b.release(first.Lease)
	b.commitLost(first.Lease)
	held := b.claimWant(h, dedupe.InFlight)
	b.wantSameTime("InFlight FirstSeen", held.FirstSeen, second.FirstSeen)

	b.commit(second.Lease)
	b.claimWant(h, dedupe.Duplicate)
}

func testCommitUnknownLease(b *bundle) {
	h := hash(1)
	stray := dedupe.Lease{Hash: h, Token: 1}
	b.commitLost(stray)
	b.release(stray)
	b.claimWant(h, dedupe.New)
}

func testExpiredLeaseTakeover(b *bundle) {
	b.needClock()
	h := hash(1)
	crashed := b.claimWant(h, dedupe.New)

	b.clock.Advance(lease - time.Second)
	b.claimWant(h, dedupe.InFlight)

	b.clock.Advance(time.Second)
	takenAt := b.clock.Now()
	owner := b.claimWant(h, dedupe.New)
	b.wantClockTime("takeover FirstSeen", owner.FirstSeen, takenAt)
	b.wantClockTime("takeover Expires", owner.Expires, takenAt.Add(lease))
	if owner.Lease.Token == crashed.Lease.Token {
		b.t.Fatalf("takeover reuses token %d", owner.Lease.Token)
	}

	b.commitLost(crashed.Lease)
	b.release(crashed.Lease)
	held := b.claimWant(h, dedupe.InFlight)
	b.wantClockTime("InFlight FirstSeen", held.FirstSeen, takenAt)
	b.wantClockTime("InFlight Expires", held.Expires, takenAt.Add(lease))

	b.commit(owner.Lease)
	b.claimWant(h, dedupe.Duplicate)
}

func testInFlight(b *bundle) {
	h := hash(1)
	t0 := b.clock.Now()
	first := b.claimWant(h, dedupe.New)

	b.clock.Advance(10 * time.Second)
	held := b.claimWant(h, dedupe.InFlight)
	b.wantClockTime("InFlight FirstSeen", held.FirstSeen, t0)
	b.wantClockTime("InFlight Expires", held.Expires, t0.Add(lease))
	b.wantSameTime("InFlight FirstSeen", held.FirstSeen, first.FirstSeen)
	b.wantSameTime("InFlight Expires", held.Expires, first.Expires)
}

func testCommittedWindow(b *bundle) {
	b.needClock()
	h := hash(1)
	t0 := b.clock.Now()
	first := b.claimWant(h, dedupe.New)
	b.commit(first.Lease)

	b.clock.Advance(window - time.Second)
	dup := b.claimWant(h, dedupe.Duplicate)
	b.wantClockTime("Duplicate Expires", dup.Expires, t0.Add(window))

	b.clock.Advance(time.Second)
	again := b.claimWant(h, dedupe.New)
	b.wantClockTime("FirstSeen after the window", again.FirstSeen, b.clock.Now())
	b.commitLost(first.Lease)
	b.claimWant(h, dedupe.InFlight)
}

func testCommitIdempotent(b *bundle) {
	h := hash(1)
	r := b.claimWant(h, dedupe.New)
	b.commit(r.Lease)
	b.commit(r.Lease)
	b.commit(r.Lease, r.Lease)
	b.claimWant(h, dedupe.Duplicate)
}

func testSweepKeepsLive(b *bundle) {
	b.sweep(0)
	rs := b.claim(hash(1), hash(2))
	b.commit(rs[0].Lease)
	b.sweep(0)
	dup := b.claimWant(hash(1), dedupe.Duplicate)
	b.wantSameTime("Duplicate FirstSeen after Sweep", dup.FirstSeen, rs[0].FirstSeen)
	held := b.claimWant(hash(2), dedupe.InFlight)
	b.wantSameTime("InFlight Expires after Sweep", held.Expires, rs[1].Expires)
}

func testSweepRemovesExpired(b *bundle) {
	b.needClock()
	t0 := b.clock.Now()
	rs := b.claim(hash(1), hash(2), hash(3), hash(5))
	b.commitFor(time.Hour, rs[0].Lease)   // expires at t0+1h, swept at the boundary
	b.commitFor(3*time.Hour, rs[1].Lease) // kept
	// rs[2] keeps its 30 s lease and is swept
	b.release(rs[3].Lease) // already gone, not counted
	long := b.claimFor(2*time.Hour, hash(4))[0]

	b.clock.Advance(time.Hour)
	b.sweep(2)
	b.sweep(0)

	dup := b.claimWant(hash(2), dedupe.Duplicate)
	b.wantClockTime("kept Duplicate Expires", dup.Expires, t0.Add(3*time.Hour))
	held := b.claimWant(hash(4), dedupe.InFlight)
	b.wantClockTime("kept InFlight Expires", held.Expires, long.Expires)
	b.commitLost(rs[2].Lease)
	b.claimWant(hash(1), dedupe.New)
	b.claimWant(hash(3), dedupe.New)
}

func testEmptyBatch(b *bundle) {
	if rs := b.claim(); len(rs) != 0 {
		b.t.Fatalf("Claim of nothing returned %d results", len(rs))
	}
	b.commit()
	b.release()
}

func testBatchClaimDuplicatesInBatch(b *bundle) {
	a, c, d := hash(1), hash(2), hash(3)
	rs := b.statuses([]dedupe.Hash{a, c, a, d, c, a},
		dedupe.New, dedupe.New, dedupe.InFlight, dedupe.New, dedupe.InFlight, dedupe.InFlight)
	for _, pair := range [][2]int{{2, 0}, {4, 1}, {5, 0}} {
		b.wantSameTime(fmt.Sprintf("result %d FirstSeen", pair[0]), rs[pair[0]].FirstSeen, rs[pair[1]].FirstSeen)
		b.wantSameTime(fmt.Sprintf("result %d Expires", pair[0]), rs[pair[0]].Expires, rs[pair[1]].Expires)
	}

	b.commit(rs[0].Lease)
	b.release(rs[3].Lease)
	e := hash(4)
	b.statuses([]dedupe.Hash{d, a, c, e, e, a},
		dedupe.New, dedupe.Duplicate, dedupe.InFlight, dedupe.New, dedupe.InFlight, dedupe.Duplicate)
}

func testBatchCommitRelease(b *bundle) {
	hs := hashes(0, 10)
	rs := b.claim(hs...)
	leases := make([]dedupe.Lease, len(rs))
	for i, r := range rs {
		if r.Status != dedupe.New {
			b.t.Fatalf("fresh key %d = %s, want New", i, r.Status)
		}
		leases[i] = r.Lease
	}
	b.commit(leases[:5]...)
	b.release(leases[5:]...)
	b.statuses(hs,
		dedupe.Duplicate, dedupe.Duplicate, dedupe.Duplicate, dedupe.Duplicate, dedupe.Duplicate,
		dedupe.New, dedupe.New, dedupe.New, dedupe.New, dedupe.New)

	// One lost lease in a batch fails the commit; the others still commit.
	rs = b.statuses(hashes(10, 13), dedupe.New, dedupe.New, dedupe.New)
	b.release(rs[1].Lease)
	b.commitLost(rs[0].Lease, rs[1].Lease, rs[2].Lease)
	b.statuses(hashes(10, 13), dedupe.Duplicate, dedupe.New, dedupe.Duplicate)
}

func testConcurrentBatchClaims(b *bundle) {
	const (
		workers = 8
		pool    = 64
		repeats = 16
	)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		news    = map[dedupe.Hash]int{}
		results int
		startCh = make(chan struct{})
	)
	for w := range workers {
		// Every batch holds every key of the pool plus repeats, in its own order.
		rng := rand.New(rand.NewPCG(1, uint64(w)))
		batch := hashes(0, pool)
		for range repeats {
			batch = append(batch, hash(rng.IntN(pool)))
		}
		rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
		wg.Go(func() {
			<-startCh
			rs, err := b.store.Claim(b.ctx, lease, batch...)
			if err == nil {
				err = checkResults(batch, rs)
			}
			if err != nil {
				b.t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rs {
				results++
				switch r.Status {
				case dedupe.New:
					news[r.Lease.Hash]++
				case dedupe.Duplicate:
					b.t.Errorf("Duplicate for a key nobody committed")
				}
			}
		})
	}
	close(startCh)
	wg.Wait()
	if results != workers*(pool+repeats) {
		b.t.Fatalf("got %d results, want %d", results, workers*(pool+repeats))
	}
	for _, h := range hashes(0, pool) {
		if news[h] != 1 {
			b.t.Errorf("key %s: New %d times across %d racing batches, want once", h, news[h], workers)
		}
	}
}

func testContextCancelled(b *bundle) {
	h := hash(1)
	cancelled, cancel := context.WithCancel(b.ctx)
	cancel()

	rs, err := b.store.Claim(cancelled, lease, h)
	if !errors.Is(err, context.Canceled) {
		b.t.Fatalf("Claim with a cancelled context: err = %v, want context.Canceled", err)
	}
	for _, r := range rs {
		if r.Status == dedupe.New {
			b.t.Fatalf("Claim with a cancelled context returned New")
		}
	}
	r := b.claimWant(h, dedupe.New)

	if err := b.store.Commit(cancelled, window, r.Lease); !errors.Is(err, context.Canceled) {
		b.t.Fatalf("Commit with a cancelled context: err = %v, want context.Canceled", err)
	}
	if err := b.store.Release(cancelled, r.Lease); !errors.Is(err, context.Canceled) {
		b.t.Fatalf("Release with a cancelled context: err = %v, want context.Canceled", err)
	}
	if _, err := b.store.Sweep(cancelled); !errors.Is(err, context.Canceled) {
		b.t.Fatalf("Sweep with a cancelled context: err = %v, want context.Canceled", err)
	}
	b.claimWant(h, dedupe.InFlight)
	b.commit(r.Lease)
	b.claimWant(h, dedupe.Duplicate)
}
