package cli_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/hookgate/hookgate/internal/pgtest"
)

// A node whose PostgreSQL goes away answers 503 with Retry-After (never a
// 202 it could not store) and /readyz says not ready; when the database is
// back it takes events again without a restart, and the event refused
// during the outage is then stored once.
func TestNodeRidesOutPostgresOutage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	db := pgtest.New(t)
	proxy, viaProxy := pgtest.NewProxy(t, db)
	node := nodesOn(t, viaProxy, 1, "", "")[0]
	src := signer(t)
	client := &http.Client{}
	post := func(id string) *http.Response {
		t.Helper()
		body := []byte(`{"type":"order.created","data":{}}`)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, node.addr+"/in/app", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("webhook-id", id)
		if err := src.Signer().Sign(req, body); err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	ready := func() int {
		resp, err := client.Get(node.addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if r := post("msg_before"); r.StatusCode != http.StatusAccepted {
		t.Fatalf("before the outage: %d, want 202", r.StatusCode)
	}
	proxy.Cut()
	r := post("msg_during")
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("during the outage: %d (Retry-After %q), want 503 with Retry-After", r.StatusCode, r.Header.Get("Retry-After"))
	}
	eventually(t, "/readyz to say not ready", func() bool { return ready() == http.StatusServiceUnavailable })
	if r := post("msg_before"); r.StatusCode != http.StatusOK && r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a stored event redelivered during the outage: %d, want 200 (from memory) or 503", r.StatusCode)
	}

	proxy.Restore()
	eventually(t, "/readyz to say ready", func() bool { return ready() == http.StatusOK })
	var st int
	eventually(t, "the refused event to be taken", func() bool {
		st = post("msg_during").StatusCode
		return st != http.StatusServiceUnavailable
	})
	if st != http.StatusAccepted {
		t.Fatalf("the event refused during the outage, sent again: %d, want 202", st)
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
}
