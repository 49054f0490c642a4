package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/dedupe/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	lease  = 30 * time.Second
	window = time.Hour
)

var start = time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)

func TestConformance(t *testing.T) {
	t.Parallel()
	dedupetest.Exercise(t, func(t *testing.T, clock *dedupetest.Clock) dedupe.Store {
		s, err := postgres.Open(t.Context(), pgtest.New(t), postgres.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}, dedupetest.Features{})
}

// testBundle is a store made by New on a pool the test owns.
type testBundle struct {
	url   string
	pool  *pgxpool.Pool
	clock *dedupetest.Clock
}

func setup(t *testing.T) (*postgres.Store, *testBundle) {
	t.Helper()
	url := pgtest.New(t)
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	clock := dedupetest.NewClock(start)
	s, err := postgres.New(t.Context(), pool, postgres.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s, &testBundle{url: url, pool: pool, clock: clock}
}

func hash(i int) dedupe.Hash {
	return dedupe.Key{Tenant: "acme", Provider: "postgrestest", ObjectType: "event", Action: "created", EventID: strconv.Itoa(i)}.Hash()
}

func hashes(from, to int) []dedupe.Hash {
	hs := make([]dedupe.Hash, 0, to-from)
	for i := from; i < to; i++ {
		hs = append(hs, hash(i))
	}
	return hs
}

func claimWant(t *testing.T, s dedupe.Store, h dedupe.Hash, want dedupe.Status) dedupe.Result {
	t.Helper()
	r, err := dedupe.ClaimOne(t.Context(), s, lease, h)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if r.Status != want {
		t.Fatalf("Claim %s = %s, want %s", h, r.Status, want)
	}
	return r
}

func count(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM dedupe_keys").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// timeArgs records every time the store sends the database as a statement
// argument.
type timeArgs struct {
	mu    sync.Mutex
	times []time.Time
}

// TraceQueryStart implements pgx.QueryTracer.
func (a *timeArgs) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, arg := range data.Args {
		switch v := arg.(type) {
		case time.Time:
			a.times = append(a.times, v)
		case *time.Time:
			if v != nil {
				a.times = append(a.times, *v)
			}
		}
	}
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (a *timeArgs) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestDatabaseClock: without Options.Now, the store sends no time of its
// own: leases, windows and sweeps are measured on the database's clock,
// which every node shares.
func TestDatabaseClock(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	sent := &timeArgs{}
	cfg.ConnConfig.Tracer = sent
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := postgres.New(t.Context(), pool, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}

	var before time.Time
	if err := pool.QueryRow(t.Context(), "SELECT now()").Scan(&before); err != nil {
		t.Fatal(err)
	}
	r := claimWant(t, s, hash(1), dedupe.New)
	if r.FirstSeen.Before(before) {
		t.Fatalf("FirstSeen %v, before the database's now() %v read ahead of the claim", r.FirstSeen, before)
	}
	if got := r.Expires.Sub(r.FirstSeen); got != lease {
		t.Fatalf("lease of %v, want %v", got, lease)
	}
	if err := s.Commit(t.Context(), window, r.Lease); err != nil {
		t.Fatal(err)
	}
	dup := claimWant(t, s, hash(1), dedupe.Duplicate)
	if got := dup.Expires.Sub(dup.FirstSeen); got < window {
		t.Fatalf("window of %v, want at least %v", got, window)
	}
	if n, err := s.Sweep(t.Context()); err != nil || n != 0 {
		t.Fatalf("Sweep = %d, %v; want 0, nil", n, err)
	}

	// Moved into the past on the database, the key expires by its clock.
	if _, err := pool.Exec(t.Context(), "UPDATE dedupe_keys SET expires = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(t.Context()); err != nil || n != 1 {
		t.Fatalf("Sweep of an expired key = %d, %v; want 1, nil", n, err)
	}
	claimWant(t, s, hash(1), dedupe.New)

	sent.mu.Lock()
	defer sent.mu.Unlock()
	if len(sent.times) > 0 {
		t.Fatalf("the store sent times of its own clock %v; want the database's now() only", sent.times)
	}
}

// TestNewIdempotent runs the migration again on a database that has the
// table; the keys survive.
func TestNewIdempotent(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	r := claimWant(t, s, hash(1), dedupe.New)
	if err := s.Commit(t.Context(), window, r.Lease); err != nil {
		t.Fatal(err)
	}
	again, err := postgres.New(t.Context(), tb.pool, postgres.Options{Now: tb.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	claimWant(t, again, hash(1), dedupe.Duplicate)
}

// TestConcurrentNew starts stores on a new database at once, as nodes
// starting together do: each one's schema creation succeeds.
func TestConcurrentNew(t *testing.T) {
	t.Parallel()
	url := pgtest.New(t)
	const nodes = 8
	errs := make(chan error, nodes)
	release := make(chan struct{})
	for range nodes {
		go func() {
			<-release
			s, err := postgres.Open(t.Context(), url, postgres.Options{})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	close(release)
	for range nodes {
		if err := <-errs; err != nil {
			t.Errorf("Open on a new database, %d at once: %v", nodes, err)
		}
	}
}

// TestCloseLeavesSharedPool: a store made by New does not close the pool
// its caller shares with other work.
func TestCloseLeavesSharedPool(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	s.Close()
	if err := tb.pool.Ping(t.Context()); err != nil {
		t.Fatalf("pool closed with the store: %v", err)
	}
}

// closedPort returns the address of a local TCP port nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestOpenUnreachable: a server that refuses connections is
// ErrUnavailable, not a protocol outcome.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	url := "postgres://postgres@" + closedPort(t) + "/hookgate?sslmode=disable&connect_timeout=5"
	s, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open of a closed port succeeded")
	}
	if !errors.Is(err, dedupe.ErrUnavailable) {
		t.Fatalf("Open of a closed port: err = %v, want ErrUnavailable", err)
	}
}

// TestOpenBadURL: a URL that cannot be parsed is the caller's mistake, not
// an unavailable store.
func TestOpenBadURL(t *testing.T) {
	t.Parallel()
	_, err := postgres.Open(t.Context(), "postgres://postgres@127.0.0.1:notaport/x", postgres.Options{})
	if err == nil || errors.Is(err, dedupe.ErrUnavailable) {
		t.Fatalf("Open of a malformed URL: err = %v, want an error other than ErrUnavailable", err)
	}
}

// TestUnavailable: once the database cannot be reached, every operation
// fails with ErrUnavailable.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	r := claimWant(t, s, hash(1), dedupe.New)
	tb.pool.Close()
	ctx := t.Context()
	if _, err := s.Claim(ctx, lease, hash(2)); !errors.Is(err, dedupe.ErrUnavailable) {
		t.Errorf("Claim: err = %v, want ErrUnavailable", err)
	}
	if err := s.Commit(ctx, window, r.Lease); !errors.Is(err, dedupe.ErrUnavailable) {
		t.Errorf("Commit: err = %v, want ErrUnavailable", err)
	}
	if err := s.Release(ctx, r.Lease); !errors.Is(err, dedupe.ErrUnavailable) {
		t.Errorf("Release: err = %v, want ErrUnavailable", err)
	}
	if _, err := s.Sweep(ctx); !errors.Is(err, dedupe.ErrUnavailable) {
		t.Errorf("Sweep: err = %v, want ErrUnavailable", err)
	}
}

// TestServerGone: a store whose server stops answering (here: every
// connection of the pool terminated, and new ones refused because the
// database is dropped) fails with ErrUnavailable, not a hang or a status.
func TestServerGone(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	claimWant(t, s, hash(1), dedupe.New)
	var name string
	if err := tb.pool.QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	admin, err := pgxpool.New(t.Context(), pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(t.Context(), "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(t.Context(), lease, hash(2)); !errors.Is(err, dedupe.ErrUnavailable) {
		t.Fatalf("Claim after the database went away: err = %v, want ErrUnavailable", err)
	}
}

// TestCancelledWhileWaiting: a claim that waits on a key another
// transaction holds locked, and whose context ends meanwhile, returns the
// context's error, not ErrUnavailable.
func TestCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	h := hash(1)
	claimWant(t, s, h, dedupe.New)
	tx, err := tb.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "SELECT FROM dedupe_keys WHERE hash = $1 FOR UPDATE", h[:]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.Claim(ctx, lease, h); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, dedupe.ErrUnavailable) {
		t.Fatalf("Claim of a locked key past its deadline: err = %v, want context.DeadlineExceeded only", err)
	}
}

// TestLargeBatch claims thousands of keys in one call, with repeats, in an
// order other than the hashes'.
func TestLargeBatch(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	ctx := t.Context()
	const n = 5000
	hs := append(hashes(0, n), hash(0), hash(n-1))
	rs, err := s.Claim(ctx, lease, hs...)
	if err != nil {
		t.Fatal(err)
	}
	leases := make([]dedupe.Lease, 0, n)
	for i, r := range rs {
		want := dedupe.New
		if i >= n {
			want = dedupe.InFlight
		}
		if r.Status != want {
			t.Fatalf("result %d = %s, want %s", i, r.Status, want)
		}
		if r.Status == dedupe.New {
			if r.Lease.Hash != hs[i] {
				t.Fatalf("result %d: lease for %s, claimed %s", i, r.Lease.Hash, hs[i])
			}
			leases = append(leases, r.Lease)
		}
	}
	if err := s.Commit(ctx, window, leases...); err != nil {
		t.Fatal(err)
	}
	rs, err = s.Claim(ctx, lease, hs...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.Status != dedupe.Duplicate {
			t.Fatalf("after commit, result %d = %s, want Duplicate", i, r.Status)
		}
	}
	if got := count(t, tb.pool); got != n {
		t.Fatalf("%d rows, want %d", got, n)
	}
}

// TestSweepManyStatements sweeps more expired keys than one statement
// deletes.
func TestSweepManyStatements(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	ctx := t.Context()
	const n = 2500
	if _, err := s.Claim(ctx, lease, hashes(0, n)...); err != nil {
		t.Fatal(err)
	}
	live := claimWant(t, s, hash(n), dedupe.New)
	if err := s.Commit(ctx, window, live.Lease); err != nil {
		t.Fatal(err)
	}
	tb.clock.Advance(lease)
	removed, err := s.Sweep(ctx)
	if err != nil || removed != n {
		t.Fatalf("Sweep = %d, %v; want %d, nil", removed, err, n)
	}
	if left := count(t, tb.pool); left != 1 {
		t.Fatalf("%d keys left, want the 1 live one", left)
	}
}

// waitForLockWaits waits until n statements on the test's database wait
// for locks other transactions hold.
func waitForLockWaits(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		var waiting int
		err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d statements waited for a lock within 10s, want %d", waiting, n)
		}
		<-tick.C
	}
}

// TestClaimRacesWriter: a claim whose statement began before another
// transaction wrote the key, and that waited on it, answers with what that
// transaction left, although its own snapshot shows the key as it was.
func TestClaimRacesWriter(t *testing.T) {
	t.Parallel()
	const (
		insertLease     = "INSERT INTO dedupe_keys VALUES ($1, 7, false, $2::timestamptz, $2::timestamptz + interval '30 seconds')"
		insertCommitted = "INSERT INTO dedupe_keys VALUES ($1, 7, true, $2::timestamptz, $2::timestamptz + interval '1 hour')"
		takeOver        = "UPDATE dedupe_keys SET token = 7, first_seen = $2::timestamptz, expires = $2::timestamptz + interval '30 seconds' WHERE hash = $1"
		cutShort        = "UPDATE dedupe_keys SET expires = $2::timestamptz WHERE hash = $1"
	)
	const (
		absent = iota
		live
		expired
	)
	for _, c := range []struct {
		name     string
		before   int // the key before the writer runs: absent, held by a live lease or by an expired one
		write    string
		rollback bool
		want     dedupe.Status
	}{
		{"inserted lease", absent, insertLease, false, dedupe.InFlight},
		{"inserted committed", absent, insertCommitted, false, dedupe.Duplicate},
		{"inserted then rolled back", absent, insertLease, true, dedupe.New},
		{"expired lease taken over", expired, takeOver, false, dedupe.InFlight},
		{"take-over rolled back", expired, takeOver, true, dedupe.New},
		{"live lease cut short", live, cutShort, false, dedupe.New},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, tb := setup(t)
			ctx := t.Context()
			h := hash(1)
			if c.before != absent {
				claimWant(t, s, h, dedupe.New)
			}
			if c.before == expired {
				tb.clock.Advance(lease)
			}
			now := tb.clock.Now()
			tx, err := tb.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			if _, err := tx.Exec(ctx, c.write, h[:], now); err != nil {
				t.Fatal(err)
			}

			type claimed struct {
				r   dedupe.Result
				err error
			}
			done := make(chan claimed, 1)
			go func() {
				r, err := dedupe.ClaimOne(ctx, s, lease, h)
				done <- claimed{r, err}
			}()
			waitForLockWaits(t, tb.pool, 1)
			if c.rollback {
				err = tx.Rollback(ctx)
			} else {
				err = tx.Commit(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := <-done
			if got.err != nil {
				t.Fatalf("Claim: %v", got.err)
			}
			if got.r.Status != c.want {
				t.Fatalf("Claim racing the writer = %s, want %s", got.r.Status, c.want)
			}
			if !got.r.FirstSeen.Equal(now) {
				t.Fatalf("FirstSeen %v, want %v", got.r.FirstSeen, now)
			}
		})
	}
}

// TestLeaseHolderRacesClaim: the holder of two leases commits or releases
// them, in the order opposite to the hashes', while a claim of the same two
// keys waits on them. Both lock the keys in hash order, so neither waits
// for the other in a cycle and both succeed; in any other order the
// database would abort one of them as a deadlock.
func TestLeaseHolderRacesClaim(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		finish func(s *postgres.Store, ctx context.Context, leases ...dedupe.Lease) error
		want   dedupe.Status
	}{
		{"commit", func(s *postgres.Store, ctx context.Context, leases ...dedupe.Lease) error {
			return s.Commit(ctx, window, leases...)
		}, dedupe.Duplicate},
		{"release", (*postgres.Store).Release, dedupe.New},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, tb := setup(t)
			ctx := t.Context()
			a, b := hash(1), hash(2)
			if bytes.Compare(a[:], b[:]) > 0 {
				a, b = b, a
			}
			rs, err := s.Claim(ctx, lease, a, b)
			if err != nil {
				t.Fatal(err)
			}

			// Another transaction locks the first key, so that the claim
			// waits on it first and the holder queues behind the claim.
			tx, err := tb.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			if _, err := tx.Exec(ctx, "SELECT FROM dedupe_keys WHERE hash = $1 FOR UPDATE", a[:]); err != nil {
				t.Fatal(err)
			}
			claimed := make(chan error, 1)
			var got []dedupe.Result
			go func() {
				var err error
				got, err = s.Claim(ctx, lease, a, b)
				claimed <- err
			}()
			waitForLockWaits(t, tb.pool, 1)
			finished := make(chan error, 1)
			go func() { finished <- c.finish(s, ctx, rs[1].Lease, rs[0].Lease) }()
			waitForLockWaits(t, tb.pool, 2)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}

			if err := <-claimed; err != nil {
				t.Fatalf("Claim: %v", err)
			}
			if err := <-finished; err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			for i, r := range got {
				if r.Status != dedupe.InFlight {
					t.Errorf("claim %d while the holder was waiting = %s, want in-flight", i, r.Status)
				}
			}
			claimWant(t, s, a, c.want)
			claimWant(t, s, b, c.want)
		})
	}
}

// TestSweepSkipsLockedKeys: a sweep does not wait for an expired key that
// another statement holds locked (a claim taking it over, say); it removes
// the others and leaves that one.
func TestSweepSkipsLockedKeys(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	ctx := t.Context()
	if _, err := s.Claim(ctx, lease, hashes(0, 10)...); err != nil {
		t.Fatal(err)
	}
	tb.clock.Advance(lease)
	tx, err := tb.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	locked := hash(3)
	if _, err := tx.Exec(ctx, "SELECT FROM dedupe_keys WHERE hash = $1 FOR UPDATE", locked[:]); err != nil {
		t.Fatal(err)
	}
	// Far longer than a sweep of ten keys takes; a sweep that waited for
	// the lock would wait for ever.
	sweepCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if n, err := s.Sweep(sweepCtx); err != nil || n != 9 {
		t.Fatalf("Sweep beside a locked key = %d, %v; want 9, nil", n, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("Sweep after the lock = %d, %v; want 1, nil", n, err)
	}
}

// TestConcurrentSweeps: sweeps racing on one table (two nodes, or a leader
// and the one taking over) remove every expired key once between them.
func TestConcurrentSweeps(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	ctx := t.Context()
	const n = 5000
	if _, err := s.Claim(ctx, lease, hashes(0, n)...); err != nil {
		t.Fatal(err)
	}
	tb.clock.Advance(lease)
	const sweepers = 4
	type swept struct {
		n   int
		err error
	}
	done := make(chan swept, sweepers)
	release := make(chan struct{})
	for range sweepers {
		go func() {
			<-release
			n, err := s.Sweep(ctx)
			done <- swept{n, err}
		}()
	}
	close(release)
	total := 0
	for range sweepers {
		r := <-done
		if r.err != nil {
			t.Fatalf("Sweep: %v", r.err)
		}
		total += r.n
	}
	if total != n {
		t.Fatalf("%d racing sweeps removed %d keys between them, want %d", sweepers, total, n)
	}
	if left := count(t, tb.pool); left != 0 {
		t.Fatalf("%d keys left", left)
	}
}
