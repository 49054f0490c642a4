package pgtest

import (
	"io"
	"net"
	neturl "net/url"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a server (PostgreSQL, Redis) until Cut: then it
// drops every connection and refuses new ones (each is closed as soon as
// it is accepted), like a database host that went away, until Restore.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

// NewProxy starts a proxy in front of the server of the database URL db and
// returns it with db's URL through the proxy. It stops when t ends.
func NewProxy(t testing.TB, db string) (*Proxy, string) {
	t.Helper()
	u, err := neturl.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	p, addr := NewTCPProxy(t, u.Host)
	u.Host = addr
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	return p, u.String()
}

// NewTCPProxy starts a proxy in front of the TCP server at target
// (host:port), any server (Redis too), and returns it with the address it
// listens on. It stops when t ends.
func NewTCPProxy(t testing.TB, target string) (*Proxy, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.Cut() })
	go p.serve()
	return p, ln.Addr().String()
}

func (p *Proxy) serve() {
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
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}
