package postgres_test

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// testItem returns an event of source shop named key, with a one-hour
// window.
func testItem(key string) inbox.Item {
	k := dedupe.Key{Tenant: "acme", Provider: "shop", ObjectType: "event", Action: "any", EventID: key}
	return inbox.Item{Event: inbox.Event{
		Hash: k.Hash(), Scope: k.Scope(), Source: "shop", Provider: "standard", Tenant: "acme",
		EventID: key, Payload: []byte(`{}`),
	}, Window: time.Hour}
}

// admin connects to the test server's maintenance database.
func admin(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// dbName is the name of the database at url.
func dbName(t *testing.T, url string) string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// TestMigrateAtOnce opens several stores on an empty database at the same
// moment, as nodes starting together do: every Open succeeds and each
// version is recorded once.
func TestMigrateAtOnce(t *testing.T) {
	t.Parallel()
	migrateAtOnce(t, pgtest.New(t))
}

// Through PgBouncer in transaction mode the migration's lock, taken inside
// its transaction, still lets one node migrate at a time.
func TestMigrateAtOnceThroughTransactionPooler(t *testing.T) {
	t.Parallel()
	migrateAtOnce(t, pgtest.NewBouncer(t, pgtest.Transaction).URL(t, pgtest.New(t)))
}

// migrateAtOnce opens six stores at once on the empty database at url:
// each opens, and every version is recorded once.
func migrateAtOnce(t *testing.T, url string) {
	const nodes = 6
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make(chan error, nodes)
	)
	for range nodes {
		wg.Go(func() {
			<-start
			s, err := postgres.Open(t.Context(), url, postgres.Options{})
			if err != nil {
				errs <- err
				return
			}
			s.Close()
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Open at once: %v", err)
	}
	s := open(t, url, nil)
	var versions []int32
	rows, err := s.Pool().Query(t.Context(), `SELECT version FROM inbox_schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	if versions, err = pgx.CollectRows(rows, pgx.RowTo[int32]); err != nil {
		t.Fatal(err)
	}
	newest, err := s.SchemaVersion(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range versions {
		if int(v) != i+1 || len(versions) != newest {
			t.Errorf("recorded versions %v, want 1 to %d, each once", versions, newest)
			break
		}
	}
}

// TestUnavailable: a server that cannot be reached, or a database that
// stops taking connections, gives errors that wrap dedupe.ErrUnavailable,
// and the store works again once the database does, without reopening. An
// ended context keeps its own identity.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, err := postgres.Open(ctx, "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", postgres.Options{})
	if !errors.Is(err, dedupe.ErrUnavailable) {
		t.Errorf("Open of a closed port: %v, want ErrUnavailable", err)
	}

	url := pgtest.New(t)
	s := open(t, url, nil)
	if _, err := s.Accept(ctx, []inbox.Item{testItem("before")}); err != nil {
		t.Fatal(err)
	}
	db := dbName(t, url)
	server := admin(t)
	if _, err := server.Exec(ctx, `ALTER DATABASE `+db+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, db); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"Accept": func() error { _, err := s.Accept(ctx, []inbox.Item{testItem("during")}); return err },
		"Lease":  func() error { _, err := s.Lease(ctx, "w", 1, time.Minute); return err },
		"Stats":  func() error { _, err := s.Stats(ctx); return err },
		"Get":    func() error { _, err := s.Get(ctx, 1); return err },
		"Ping":   func() error { return s.Ping(ctx) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, dedupe.ErrUnavailable) {
			t.Errorf("%s while the database refuses connections: %v, want ErrUnavailable", name, err)
		}
	}
	if _, err := server.Exec(ctx, `ALTER DATABASE `+db+` ALLOW_CONNECTIONS true`); err != nil {
		t.Fatal(err)
	}
	out, err := s.Accept(ctx, []inbox.Item{testItem("before"), testItem("after")})
	if err != nil {
		t.Fatalf("Accept once the database is back: %v", err)
	}
	if out[0].Status != dedupe.Duplicate || out[1].Status != dedupe.New {
		t.Errorf("after recovery: %s, %s; want duplicate, new", out[0].Status, out[1].Status)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Accept(cancelled, []inbox.Item{testItem("cancelled")})
	if !errors.Is(err, context.Canceled) || errors.Is(err, dedupe.ErrUnavailable) {
		t.Errorf("Accept with a cancelled context: %v, want context.Canceled and not ErrUnavailable", err)
	}
	if _, err := s.Get(ctx, 1<<40); !errors.Is(err, inbox.ErrNotFound) || errors.Is(err, dedupe.ErrUnavailable) {
		t.Errorf("Get of an unknown id: %v, want ErrNotFound only", err)
	}
}

// TestDatabaseClock: without Options.Now the times come from the
// database's now(), not the process's clock.
func TestDatabaseClock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, pgtest.New(t), nil)
	var before, after time.Time
	if err := s.Pool().QueryRow(ctx, `SELECT now()`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	out, err := s.Accept(ctx, []inbox.Item{testItem("a")})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Lease(ctx, "w", 1, time.Hour)
	if err != nil || len(evs) != 1 {
		t.Fatalf("Lease: %v, %v", evs, err)
	}
	if err := s.Pool().QueryRow(ctx, `SELECT now()`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	o := out[0]
	if o.FirstSeen.Before(before) || o.FirstSeen.After(after) || o.Expires.Sub(o.FirstSeen) != time.Hour {
		t.Errorf("first seen %v, expires %v; want between %v and %v, an hour apart", o.FirstSeen, o.Expires, before, after)
	}
	var until time.Time
	if err := s.Pool().QueryRow(ctx, `SELECT lease_until FROM inbox_events WHERE id = $1`, o.ID).Scan(&until); err != nil {
		t.Fatal(err)
	}
	if until.Before(before.Add(time.Hour)) || until.After(after.Add(time.Hour)) {
		t.Errorf("lease until %v, want an hour after the database's now (%v..%v)", until, before, after)
	}
}

// TestCountsFold: the count shards of sessions that ended are folded into
// one by Sweep, and the counts stay what they were.
func TestCountsFold(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.New(t)
	for i := range 3 {
		other, err := postgres.Open(ctx, url, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Accept(ctx, []inbox.Item{testItem(fmt.Sprint("a", i)), testItem("dup")}); err != nil {
			t.Fatal(err)
		}
		other.Close()
	}
	// A closed connection's backend exits a moment later; wait for them
	// all to be gone, as the sessions of a node that stopped are.
	if _, err := admin(t).Exec(ctx, `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
		WHERE datname = $1`, dbName(t, url)); err != nil {
		t.Fatal(err)
	}
	s := open(t, url, nil)
	want, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	shards := func() (n int) {
		t.Helper()
		if err := s.Pool().QueryRow(ctx, `SELECT count(DISTINCT shard) FROM inbox_counts`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := shards(); n < 3 {
		t.Fatalf("%d shards before the sweep, want one per session (3)", n)
	}
	if _, err := s.Sweep(ctx, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if n := shards(); n != 1 {
		t.Errorf("%d shards after the sweep, want the ended sessions' folded into 1", n)
	}
	got, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := got.Sources["shop"], want.Sources["shop"]; g.Accepted != 4 || g.Duplicates != 2 ||
		g.Accepted != w.Accepted || g.Duplicates != w.Duplicates || g.ByStatus[inbox.StatusReceived] != 4 {
		t.Errorf("after folding: %+v, want %+v (4 accepted, 2 duplicates)", g, w)
	}
}

// waitFor checks cond every few milliseconds until it holds, and fails t
// if it does not within ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// TestAcceptRacingCopy: while another session (another node) holds an
// uncommitted key or replay guard digest of an item, Accept of the item
// waits on the index; once the other commits, the item is a duplicate with
// the other's times, which Accept's own snapshot could not see, and no
// event is stored for it.
func TestAcceptRacingCopy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, insert string
		key          func(inbox.Item) []byte
		digest       bool
	}{
		{"key", `INSERT INTO inbox_keys (hash, first_seen, expires) VALUES ($1, $2, $3)`,
			func(it inbox.Item) []byte { return it.Event.Hash[:] }, false},
		{"digest", `INSERT INTO inbox_digests (digest, first_seen, expires) VALUES ($1, $2, $3)`,
			func(it inbox.Item) []byte { return it.Digest[:] }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			url := pgtest.New(t)
			s := open(t, url, nil)
			it := testItem("racing")
			if c.digest {
				it.Digest = dedupe.Key{Provider: "digest", EventID: "racing"}.Hash()
			}
			other, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close(context.Background())
			tx, err := other.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			first := time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC)
			if _, err := tx.Exec(ctx, c.insert, c.key(it), first, first.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			type result struct {
				out []inbox.Outcome
				err error
			}
			done := make(chan result, 1)
			go func() {
				out, err := s.Accept(ctx, []inbox.Item{it})
				done <- result{out, err}
			}()
			waitFor(t, "Accept waits on the other session's insert", func() bool {
				var waiting bool
				err := other.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting)
				return err == nil && waiting
			})
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			if o := r.out[0]; o.Status != dedupe.Duplicate || o.ID != 0 || !o.FirstSeen.Equal(first) || !o.Expires.Equal(first.Add(time.Hour)) {
				t.Errorf("racing copy: %+v, want a duplicate first seen %v, expiring an hour later", o, first)
			}
			if evs, err := s.List(ctx, inbox.Filter{}); err != nil || len(evs) != 0 {
				t.Errorf("stored events %v, %v; want none", evs, err)
			}
		})
	}
}
