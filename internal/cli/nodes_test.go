package cli_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/backend"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// nodes starts n `hookgate serve` processes on one fresh PostgreSQL
// database, with the app source delivering to sinkURL (none when empty),
// and returns them with the database's URL.
func nodes(t *testing.T, n int, sinkURL string) ([]*process, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	db := pgtest.New(t)
	return nodesOn(t, pooled(t, db), n, sinkURL, ""), db
}

// The tests of several nodes on PostgreSQL run as the environment says:
// HOOKGATE_TEST_POOLER=transaction or session puts PgBouncer in that
// mode between the nodes and the database (.ci/run runs them so), and
// HOOKGATE_TEST_DATABASE_SESSION=1 gives each node a database_session
// that reaches the server directly.
var (
	testPooler          = os.Getenv("HOOKGATE_TEST_POOLER")
	testDatabaseSession = os.Getenv("HOOKGATE_TEST_DATABASE_SESSION") == "1"
)

// pooled is db, a database of the test server, as the nodes of t reach
// it: through a PgBouncer of t's own when HOOKGATE_TEST_POOLER is set,
// directly otherwise.
func pooled(t *testing.T, db string) string {
	t.Helper()
	if testPooler == "" {
		return db
	}
	return pgtest.NewBouncer(t, testPooler).URL(t, db)
}

// nodeDatabase is the configuration of node i's database: db, with the
// node's application_name so that the test can tell its sessions apart,
// and, with HOOKGATE_TEST_DATABASE_SESSION=1, a database_session on the
// same database of the test server, reached directly.
func nodeDatabase(t *testing.T, db string, i int) string {
	t.Helper()
	named := func(db string) string {
		u, err := neturl.Parse(db)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("application_name", nodeName(i))
		u.RawQuery = q.Encode()
		return u.String()
	}
	lines := fmt.Sprintf("database: %q\n", named(db))
	if testDatabaseSession {
		direct, err := neturl.Parse(pgtest.ServerURL())
		if err != nil {
			t.Fatal(err)
		}
		u, err := neturl.Parse(db)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = direct.Host
		lines += fmt.Sprintf("database_session: %q\n", named(u.String()))
	}
	return lines
}

// nodesOn starts n `hookgate serve` processes on the PostgreSQL database at
// db, with extra appended to their configuration. Node i connects as
// application_name hookgate-node<i>, so that the test can tell its
// sessions apart.
func nodesOn(t *testing.T, db string, n int, sinkURL, extra string) []*process {
	t.Helper()
	paths := nodeConfigs(t, db, n, sinkURL, func(int) string { return extra })
	ps := make([]*process, n)
	for i, path := range paths {
		ps[i] = startServe(t, "--config", path)
	}
	return ps
}

// nodeConfigs writes the configuration files of n nodes on db (see
// nodesOn), node i's with extra(i) appended, and returns their paths.
func nodeConfigs(t *testing.T, db string, n int, sinkURL string, extra func(i int) string) []string {
	t.Helper()
	dir := t.TempDir()
	secretFile := dir + "/secret"
	if err := os.WriteFile(secretFile, []byte(crashSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	paths := make([]string, n)
	for i := range paths {
		cfg := fmt.Sprintf(`listen: 127.0.0.1:0
%sworkers: 2
batch: 50
lease: 3s
%ssources:
  - name: app
    provider: standard
    secret: file:%s
`, nodeDatabase(t, db, i), extra(i), secretFile)
		if sinkURL != "" {
			cfg += fmt.Sprintf(`    destinations:
      - name: sink
        url: %s/hooks
        timeout: 2s
        retry_initial: 100ms
        retry_max_delay: 1s
`, sinkURL)
		}
		paths[i] = fmt.Sprintf("%s/node%d.yaml", dir, i)
		if err := os.WriteFile(paths[i], []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// nodeName is the application_name of node i's sessions.
func nodeName(i int) string { return fmt.Sprintf("hookgate-node%d", i) }

// eventually polls cond until it holds, failing t after 30 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openDB opens the nodes' database from the test.
func openDB(t *testing.T, url string) inbox.Backend {
	t.Helper()
	b, err := backend.Open(t.Context(), url, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// G2 across nodes: 100 concurrent copies of one event spread over three
// nodes on one PostgreSQL database give exactly one 202 and one row; the
// others are duplicates (200) or, while the first copy is being written on
// another node, in flight (409).
func TestNodesAcceptOneCopy(t *testing.T) {
	t.Parallel()
	ps, db := nodes(t, 3, "")
	src := signer(t)
	client := &http.Client{Timeout: 10 * time.Second}
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		wg     sync.WaitGroup
	)
	start := make(chan struct{})
	for i := range 100 {
		wg.Go(func() {
			<-start
			st, err := send(context.Background(), client, src, ps[i%3].addr, "msg_once")
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
	if counts[http.StatusAccepted] != 1 || counts[http.StatusOK]+counts[http.StatusConflict] != 99 {
		t.Errorf("answers %v, want one 202 and 99 of 200 or 409", counts)
	}
	st, err := openDB(t, db).Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Sources["app"].Accepted; n != 1 {
		t.Errorf("%d events accepted, want 1", n)
	}
}

// Several nodes on one database, 16 senders to random nodes with 20%
// redeliveries, one node killed with SIGKILL in the middle of the burst and
// of the deliveries: every event acknowledged with 202 is stored once and
// delivered, each under one webhook-id; the killed node's leased events
// are delivered by the others after their lease.
func TestNodesShareTheWork(t *testing.T) {
	t.Parallel()
	var (
		mu        sync.Mutex
		delivered = map[string]int{} // webhook-id -> deliveries
	)
	dest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		delivered[r.Header.Get("webhook-id")]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer dest.Close()
	ps, db := nodes(t, 3, dest.URL)
	src := signer(t)
	client := &http.Client{Timeout: 10 * time.Second}

	const senders, perSender = 16, 625 // 10,000 sends, a fifth of them redeliveries
	var (
		ackMu  sync.Mutex
		acked  = map[string]bool{}
		wg     sync.WaitGroup
		killed = make(chan struct{})
		once   sync.Once
	)
	for g := range senders {
		wg.Go(func() {
			for i := range perSender {
				id := fmt.Sprintf("msg_n%d_%d", g, i)
				if i > 0 && rand.IntN(5) == 0 {
					id = fmt.Sprintf("msg_n%d_%d", g, rand.IntN(i)) // a redelivery
				}
				for attempt := 0; ; attempt++ {
					p := ps[rand.IntN(len(ps))]
					select {
					case <-killed:
						p = ps[1+rand.IntN(len(ps)-1)]
					default:
					}
					st, err := send(context.Background(), client, src, p.addr, id)
					if err == nil && (st == http.StatusAccepted || st == http.StatusOK) {
						ackMu.Lock()
						acked[id] = true
						ackMu.Unlock()
						break
					}
					if attempt > 20 {
						t.Errorf("%s: no 2xx after %d tries (last %d %v)", id, attempt, st, err)
						return
					}
				}
				if g == 0 && i == perSender/2 {
					once.Do(func() {
						if err := ps[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
							t.Error(err)
						}
						close(killed)
					})
				}
			}
		})
	}
	wg.Wait()
	ps[0].cmd.Wait()

	store := openDB(t, db)
	deadline := time.Now().Add(90 * time.Second)
	for {
		st, err := store.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending == 0 && st.Sources["app"].Accepted == int64(len(acked)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pending, %d accepted of %d acknowledged after 90s", st.Pending, st.Sources["app"].Accepted, len(acked))
		}
		time.Sleep(50 * time.Millisecond)
	}
	stored := map[string]string{} // event id -> key
	for before := int64(0); ; {
		page, err := store.List(t.Context(), inbox.Filter{BeforeID: before, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			if _, dup := stored[e.EventID]; dup {
				t.Errorf("event %s stored twice", e.EventID)
			}
			stored[e.EventID] = e.Hash.String()
			if e.Status != inbox.StatusProcessed {
				t.Errorf("event %s is %s, want processed", e.EventID, e.Status)
			}
		}
		before = page[len(page)-1].ID
	}
	mu.Lock()
	defer mu.Unlock()
	twice := 0
	for id := range acked {
		key, ok := stored[id]
		if !ok {
			t.Errorf("event %s was acknowledged but is not stored", id)
			continue
		}
		switch n := delivered[key]; {
		case n == 0:
			t.Errorf("event %s was never delivered", id)
		case n > 1:
			twice++
		}
	}
	if len(delivered) != len(stored) {
		t.Errorf("%d distinct webhook-ids delivered for %d stored events", len(delivered), len(stored))
	}
	t.Logf("%d events acknowledged across 3 nodes (one killed); %d delivered more than once, each under one webhook-id", len(acked), twice)
}
