package cli_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/pgtest"
)

// A node whose PostgreSQL stops answering without refusing (a hung host,
// a partition) answers within dedupe.store_timeout: 503 + Retry-After,
// never a 202, and nothing kept; /readyz answers while the store hangs,
// not ready; once the database answers again the refused event is stored
// once. SIGTERM ends a node whose database hangs.
func TestNodeAnswersWhilePostgresHangs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	db := pgtest.New(t)
	proxy, viaProxy := pgtest.NewProxy(t, db)
	node := nodesOn(t, viaProxy, 1, "", "dedupe:\n  store_timeout: 2s\n")[0]
	src := signer(t)
	// Far above the store timeout: a request or a probe that outlives
	// these waited on the store instead of answering.
	client := &http.Client{Timeout: 30 * time.Second}
	probe := &http.Client{Timeout: 3 * time.Second}
	send := func(id string) (*http.Response, error) {
		body := []byte(`{"type":"order.created","data":{}}`)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, node.addr+"/in/app", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("webhook-id", id)
		if err := src.Signer().Sign(req, body); err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		return resp, nil
	}
	post := func(id string) *http.Response {
		t.Helper()
		resp, err := send(id)
		if err != nil {
			t.Fatalf("post %s: %v", id, err)
		}
		return resp
	}
	ready := func() int {
		t.Helper()
		resp, err := probe.Get(node.addr + "/readyz")
		if err != nil {
			t.Fatalf("/readyz: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if r := post("msg_before"); r.StatusCode != http.StatusAccepted {
		t.Fatalf("before the hang: %d, want 202", r.StatusCode)
	}
	proxy.Hang()
	r := post("msg_during")
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("while the database hangs: %d (Retry-After %q), want 503 with Retry-After", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if st := ready(); st == http.StatusOK {
		t.Fatalf("/readyz while the database hangs: %d, want not ready", st)
	}

	proxy.Restore()
	eventually(t, "/readyz to say ready", func() bool { return ready() == http.StatusOK })
	var st int
	eventually(t, "the refused event to be taken", func() bool {
		st = post("msg_during").StatusCode
		return st != http.StatusServiceUnavailable
	})
	if st != http.StatusAccepted {
		t.Fatalf("the event refused during the hang, sent again: %d, want 202 (nothing of it was kept)", st)
	}
	if r := post("msg_during"); r.StatusCode != http.StatusOK {
		t.Fatalf("and once more: %d, want 200", r.StatusCode)
	}
	stats, err := openDB(t, db).Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := stats.Sources["app"].Accepted; n != 2 {
		t.Fatalf("%d events stored, want 2", n)
	}

	proxy.Hang()
	// A request in flight at SIGTERM, or one the closing node refused:
	// either way not a 202 for an event the hung database did not store.
	answered := make(chan int, 1)
	go func() {
		resp, err := send("msg_at_shutdown")
		if err != nil {
			answered <- 0
			return
		}
		answered <- resp.StatusCode
	}()
	if err := node.cmd.Process.Signal(os.Signal(syscall.SIGTERM)); err != nil {
		t.Fatal(err)
	}
	exitsWithin(t, node, time.Minute, "the node whose database hangs")
	if st := <-answered; st == http.StatusAccepted {
		t.Fatal("a request sent at SIGTERM while the database hangs: 202, want an error")
	}
}

// A node whose database hangs while an attempt is in flight still exits
// on SIGTERM: recording that attempt is a write like any other, bounded by
// the lease once the shutdown begins. The destination holds the attempt
// until the database hangs, so the record is always written to the hung
// database.
func TestShutdownRecordsAttemptsWithinTheLease(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	dest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(dest.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	db := pgtest.New(t)
	proxy, viaProxy := pgtest.NewProxy(t, db)
	node := nodesOn(t, viaProxy, 1, dest.URL, "dedupe:\n  store_timeout: 2s\n")[0]
	if st, err := send(t.Context(), http.DefaultClient, signer(t), node.addr, "msg_in_flight"); err != nil || st != http.StatusAccepted {
		t.Fatalf("send: %d, %v; want 202", st, err)
	}
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("waited 30s for the attempt to reach the destination")
	}
	proxy.Hang()
	if err := node.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	close(release)
	exitsWithin(t, node, time.Minute, "the node recording an attempt to its hung database")
}

// exitsWithin fails t unless p, sent SIGTERM, exits within d; a node that
// does not is sent SIGQUIT, which prints where it waits into its log.
func exitsWithin(t *testing.T, p *process, d time.Duration, what string) {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(d):
		p.cmd.Process.Signal(syscall.SIGQUIT)
		<-exited
		t.Fatalf("SIGTERM: %s did not exit within %v", what, d)
	}
}
