package server_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	inboxpostgres "github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// openPooled opens the PostgreSQL inbox on a database of its own with a
// pool of maxConns connections, closed when t ends.
func openPooled(t *testing.T, maxConns int) *inboxpostgres.Store {
	t.Helper()
	u, err := url.Parse(pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(maxConns))
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := inboxpostgres.Open(ctx, u.String(), inboxpostgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// holdConnection acquires a connection of store's pool for the test and
// returns its release, which may be called more than once; it is called
// when t ends.
func holdConnection(t *testing.T, store *inboxpostgres.Store) (release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := store.Pool().Acquire(ctx)
	if err != nil {
		t.Fatalf("acquiring a connection of the pool: %v", err)
	}
	release = sync.OnceFunc(conn.Release)
	t.Cleanup(release)
	return release
}

// scrapeValue reads one series, as written in the exposition format
// (`name{label="value"}`), from a scrape.
func scrapeValue(t *testing.T, scrape, series string) float64 {
	t.Helper()
	for line := range strings.Lines(scrape) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in the scrape:\n%s", series, grepLines(scrape, "hookgate_db_"))
	return 0
}

// On PostgreSQL /metrics shows the pool: a connection the test holds is
// acquired, and max is the URL's pool_max_conns.
func TestDBConnectionsMetric(t *testing.T) {
	t.Parallel()
	store := openPooled(t, 2)
	cfg := config.Default()
	cfg.Metrics.Public = true
	srv := serve(t, cfg, store)
	holdConnection(t, store)
	code, scrape := getPath(t, srv.public+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	if n := scrapeValue(t, scrape, `hookgate_db_connections{state="acquired"}`); n < 1 {
		t.Errorf(`hookgate_db_connections{state="acquired"} = %v, want at least the test's 1`, n)
	}
	if n := scrapeValue(t, scrape, `hookgate_db_connections{state="max"}`); n != 2 {
		t.Errorf(`hookgate_db_connections{state="max"} = %v, want pool_max_conns 2`, n)
	}
	for _, series := range []string{`hookgate_db_connections{state="idle"}`, `hookgate_db_connections{state="constructing"}`,
		"hookgate_db_acquire_waits_total", "hookgate_db_acquire_wait_seconds_total", "hookgate_db_acquire_canceled_total"} {
		scrapeValue(t, scrape, series)
	}
}

// SQLite has no pool: no hookgate_db_ series.
func TestDBConnectionsMetricNotOnSQLite(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Metrics.Public = true
	srv := serve(t, cfg, nil)
	code, scrape := getPath(t, srv.public+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	if got := grepLines(scrape, "hookgate_db_"); got != "" {
		t.Fatalf("SQLite store, want no hookgate_db_ series:\n%s", got)
	}
}

// A pool with no connection to lend is an answer, not a wait: the write
// gives up at dedupe.store_timeout and its sender gets 503 + Retry-After;
// once a connection is free again the sender's retry is accepted.
func TestExhaustedPoolAnswers503(t *testing.T) {
	t.Parallel()
	store := openPooled(t, 1)
	const storeTimeout = 2 * time.Second
	cfg := config.Default()
	cfg.Metrics.Public = true
	cfg.Dedupe.StoreTimeout = config.Duration(storeTimeout)
	srv := serve(t, cfg, store)
	release := holdConnection(t, store)

	post := func() *http.Response {
		t.Helper()
		body := charge("evt_pool", "charge.succeeded", "ch_pool", "succeeded", 100, false)
		req, err := http.NewRequest(http.MethodPost, srv.public+"/in/stripe", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.gw.Sources()[0].Signer().Sign(req, body); err != nil {
			t.Fatal(err)
		}
		// Bounded well past the store timeout: a request that waits for
		// the pool instead of answering fails here.
		client := &http.Client{Timeout: storeTimeout + 10*time.Second}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("no answer while the pool is exhausted (dedupe.store_timeout %v): %v", storeTimeout, err)
		}
		resp.Body.Close()
		return resp
	}

	resp := post()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("with every connection of the pool held: %d, want 503", resp.StatusCode)
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 {
		t.Fatalf("503 with Retry-After %q, want a number of seconds", resp.Header.Get("Retry-After"))
	}
	// The 503 may leave before the abandoned acquire is counted.
	waitFor(t, "the refused write's acquire counted as canceled", func() bool {
		return store.Pool().Stat().CanceledAcquireCount() >= 1
	})
	// The scrape waits for the inbox's stats (up to metrics.StatsTimeout),
	// which want a connection too; the pool's own series need none.
	_, scrape := getPath(t, srv.public+"/metrics", "")
	if n := scrapeValue(t, scrape, "hookgate_db_acquire_canceled_total"); n < 1 {
		t.Errorf("hookgate_db_acquire_canceled_total = %v after the refused write, want at least 1", n)
	}

	release()
	if resp := post(); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the retry with the connection given back: %d, want 202", resp.StatusCode)
	}
}
