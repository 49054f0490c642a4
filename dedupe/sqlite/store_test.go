package sqlite_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/dedupe/sqlite"
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
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "dedupe.db"), sqlite.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, dedupetest.Features{})
}

// testBundle is a store made by New on a database the test owns.
type testBundle struct {
	path  string
	db    *sql.DB
	clock *dedupetest.Clock
}

func setup(t *testing.T) (*sqlite.Store, *testBundle) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hookgate.db")
	db := openDB(t, path)
	clock := dedupetest.NewClock(start)
	s, err := sqlite.New(db, sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &testBundle{path: path, db: db, clock: clock}
}

func hash(i int) dedupe.Hash {
	return dedupe.Key{Tenant: "acme", Provider: "sqlitetest", ObjectType: "event", Action: "created", EventID: strconv.Itoa(i)}.Hash()
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

func count(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTx claims, stores an inbox row and commits the key in one caller's
// transaction, as the gateway does: all of it rolls back together or
// commits together.
func TestTx(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	ctx := t.Context()
	if _, err := tb.db.ExecContext(ctx, "CREATE TABLE inbox (id INTEGER PRIMARY KEY, hash BLOB NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	h := hash(1)

	accept := func() *sql.Tx {
		t.Helper()
		tx, err := tb.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		ts := s.Tx(tx)
		r := claimWant(t, ts, h, dedupe.New)
		if _, err := tx.ExecContext(ctx, "INSERT INTO inbox (hash) VALUES (?)", h[:]); err != nil {
			t.Fatal(err)
		}
		if err := ts.Commit(ctx, window, r.Lease); err != nil {
			t.Fatal(err)
		}
		claimWant(t, ts, h, dedupe.Duplicate)
		if n := count(t, tb.db, "dedupe_keys"); n != 0 {
			t.Fatalf("another connection sees %d keys before the transaction commits, want 0", n)
		}
		return tx
	}

	if err := accept().Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, tb.db, "inbox"); n != 0 {
		t.Fatalf("inbox holds %d rows after rollback, want 0", n)
	}
	r := claimWant(t, s, h, dedupe.New)
	if err := s.Release(ctx, r.Lease); err != nil {
		t.Fatal(err)
	}

	if err := accept().Commit(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, tb.db, "inbox"); n != 1 {
		t.Fatalf("inbox holds %d rows after commit, want 1", n)
	}
	claimWant(t, s, h, dedupe.Duplicate)
}

// TestTxSweep sweeps inside a caller's transaction: the expired key is gone
// only if the transaction commits.
func TestTxSweep(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	ctx := t.Context()
	claimWant(t, s, hash(1), dedupe.New)
	tb.clock.Advance(lease)

	for _, commit := range []bool{false, true} {
		tx, err := tb.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.Tx(tx).Sweep(ctx)
		if err != nil || n != 1 {
			t.Fatalf("Sweep = %d, %v; want 1, nil", n, err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, tb.db, "dedupe_keys"); n != 0 {
		t.Fatalf("%d keys left after a committed sweep, want 0", n)
	}
}

// TestDurable reopens the file: a committed key is still a duplicate, and a
// lease still holds its key.
func TestDurable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "dedupe.db")
	clock := dedupetest.NewClock(start)
	s, err := sqlite.Open(path, sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.Claim(t.Context(), lease, hash(1), hash(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(t.Context(), window, rs[0].Lease); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = sqlite.Open(path, sqlite.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dup := claimWant(t, s, hash(1), dedupe.Duplicate)
	if !dup.FirstSeen.Equal(start) || !dup.Expires.Equal(start.Add(window)) {
		t.Errorf("reopened Duplicate first seen %v, expires %v; want %v, %v", dup.FirstSeen, dup.Expires, start, start.Add(window))
	}
	claimWant(t, s, hash(2), dedupe.InFlight)
	if err := s.Commit(t.Context(), window, rs[1].Lease); err != nil {
		t.Fatalf("Commit of a lease taken before reopening: %v", err)
	}
}

// TestNotDurable: a store is only made on a database whose commits
// survive a crash, WAL with synchronous=FULL.
func TestNotDurable(t *testing.T) {
	t.Parallel()
	s, err := sqlite.Open(":memory:", sqlite.Options{})
	if err == nil {
		s.Close()
	}
	if !errors.Is(err, sqlite.ErrNotDurable) {
		t.Fatalf("Open of an in-memory database: err = %v, want ErrNotDurable", err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "rollback.db")+"?_pragma=synchronous(FULL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := sqlite.New(db, sqlite.Options{}); !errors.Is(err, sqlite.ErrNotDurable) {
		t.Fatalf("New on a database in rollback-journal mode: err = %v, want ErrNotDurable", err)
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
	again, err := sqlite.New(tb.db, sqlite.Options{Now: tb.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	claimWant(t, again, hash(1), dedupe.Duplicate)
}

// TestCloseLeavesSharedDB: a store made by New does not close the database
// the gateway shares with its inbox.
func TestCloseLeavesSharedDB(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tb.db.PingContext(t.Context()); err != nil {
		t.Fatalf("database closed with the store: %v", err)
	}
}

// TestUnavailable: failures of the database wrap dedupe.ErrUnavailable.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	ctx := t.Context()
	r := claimWant(t, s, hash(1), dedupe.New)
	tx, err := tb.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := s.Tx(tx)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := tb.db.Close(); err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]dedupe.Store{"store": s, "finished tx": ts} {
		if _, err := st.Claim(ctx, lease, hash(2)); !errors.Is(err, dedupe.ErrUnavailable) {
			t.Errorf("%s: Claim: err = %v, want ErrUnavailable", name, err)
		}
		if err := st.Commit(ctx, window, r.Lease); !errors.Is(err, dedupe.ErrUnavailable) {
			t.Errorf("%s: Commit: err = %v, want ErrUnavailable", name, err)
		}
		if err := st.Release(ctx, r.Lease); !errors.Is(err, dedupe.ErrUnavailable) {
			t.Errorf("%s: Release: err = %v, want ErrUnavailable", name, err)
		}
		if _, err := st.Sweep(ctx); !errors.Is(err, dedupe.ErrUnavailable) {
			t.Errorf("%s: Sweep: err = %v, want ErrUnavailable", name, err)
		}
	}
}

// TestLargeBatch claims more keys than one statement takes, with repeats
// that fall into different statements of the same call.
func TestLargeBatch(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := t.Context()
	const n = 700
	hs := make([]dedupe.Hash, 0, n+2)
	for i := range n {
		hs = append(hs, hash(i))
	}
	hs = append(hs, hash(0), hash(n-1))
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
}

// TestSweepManyChunks sweeps more expired keys than one statement deletes.
func TestSweepManyChunks(t *testing.T) {
	t.Parallel()
	s, tb := setup(t)
	ctx := t.Context()
	const n = 2500
	hs := make([]dedupe.Hash, n)
	for i := range hs {
		hs[i] = hash(i)
	}
	if _, err := s.Claim(ctx, lease, hs...); err != nil {
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
	if left := count(t, tb.db, "dedupe_keys"); left != 1 {
		t.Fatalf("%d keys left, want the 1 live one", left)
	}
}

// openDB opens the database at path with the settings the package
// documentation asks of a database given to New.
func openDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
