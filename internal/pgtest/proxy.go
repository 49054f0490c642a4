package pgtest

import (
	"net"
	neturl "net/url"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a server (PostgreSQL, Redis). Cut makes
// it a host that went away: it drops every connection and refuses new ones
// (each is closed as soon as it is accepted). Hang makes it a host that
// stopped answering without saying so: connections stay open, new ones are
// accepted, and nothing is forwarded either way. Restore lets connections
// through again; the connections a hang held are closed then, unforwarded,
// so that nothing sent during the hang reaches the server late.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	resumed *sync.Cond // broadcast when a hang ends
	cut     bool
	hung    bool
	conns   map[net.Conn]bool
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
	p.resumed = sync.NewCond(&p.mu)
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
		switch {
		case p.cut:
			c.Close()
		case p.hung:
			// Held open, unanswered, until the hang ends.
			p.conns[c] = true
		default:
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				break
			}
			p.conns[c], p.conns[up] = true, true
			go p.pipe(up, c)
			go p.pipe(c, up)
		}
		p.mu.Unlock()
	}
}

// pipe copies from src to dst until either fails. Bytes read during a hang
// are held until it ends, and then dropped with the connections.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.hung {
				p.resumed.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Cut drops every connection and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.dropAll()
}

// Hang stops forwarding: every connection, open or new, stays open and
// silent, as behind a network that drops packets, until Restore or Cut.
func (p *Proxy) Hang() {
	p.mu.Lock()
	p.hung = true
	p.mu.Unlock()
}

// Restore lets connections through again. After a hang it first closes
// the connections the hang held, with what they held.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hung {
		p.dropAll()
	}
	p.cut, p.hung = false, false
}

// dropAll closes every connection and ends a hang's waits, which then
// find their connection closed. p.mu must be held.
func (p *Proxy) dropAll() {
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	p.hung = false
	p.resumed.Broadcast()
}
