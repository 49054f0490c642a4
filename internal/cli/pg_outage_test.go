package cli_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"sync"
	"testing"

	"github.com/hookgate/hookgate/internal/pgtest"
)

// cutProxy forwards TCP connections to a PostgreSQL server until Cut:
// then it drops every connection and refuses new ones (each is closed as
// soon as it is accepted), like a database host that went away, until
// Restore.
type cutProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.Cut() })
	go p.serve()
	return p
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }()
		go func() { io.Copy(c, up); c.Close() }()
	}
}

// Cut drops every connection and refuses new ones.
func (p *cutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore lets connections through again.
func (p *cutProxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

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
	u, err := neturl.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	node := nodesOn(t, u.String(), 1, "", "")[0]
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
