// Package guard slows down the guessing of a token: after a few wrong
// tokens from one client address, that address is refused for a while,
// the pause doubling with each new block up to [MaxBlock]. The admin API,
// /metrics and the console's sign-in each keep a [Limiter].
//
// The client address is the TCP peer (the request's RemoteAddr), never a
// header such as X-Forwarded-For, which the guesser writes: behind a proxy
// every client shares the proxy's address, so a guesser there blocks the
// others too, which is the price of not trusting the header. An IPv6 client
// is tracked by its /64, the block a single host is usually given.
package guard

import (
	"container/list"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// The limiter's policy: Failures wrong tokens within Window block an
// address for FirstBlock; a wrong token after a block ends blocks it again
// for twice as long, up to MaxBlock. An address that fails nothing for
// MaxBlock after its last failure and its last block starts over. MaxAddresses bounds the memory: beyond it the
// address updated longest ago is forgotten. LogEvery bounds the log: one
// line per address per interval, counting the failures since the last.
const (
	Failures     = 5
	Window       = time.Minute
	FirstBlock   = time.Minute
	MaxBlock     = 15 * time.Minute
	MaxAddresses = 10000
	LogEvery     = time.Minute
)

// Options configure a [Limiter].
type Options struct {
	// What names the guarded door in log lines ("admin api", "console
	// sign-in").
	What string
	// Logger receives the failures, at most one line per address per
	// LogEvery; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxAddresses overrides [MaxAddresses] when positive.
	MaxAddresses int
}

// Limiter counts wrong tokens per client address. It is safe for
// concurrent use.
type Limiter struct {
	what string
	log  *slog.Logger
	now  func() time.Time
	max  int

	mu     sync.Mutex
	byAddr map[netip.Prefix]*list.Element
	// order holds the *client entries, the one updated longest ago first.
	order *list.List
}

// client is what the limiter knows of one address.
type client struct {
	addr netip.Prefix
	// since is when the current window of failures began; failures counts
	// them.
	since    time.Time
	failures int
	// block is the length of the last block, 0 before the first;
	// blockedUntil its end.
	block        time.Duration
	blockedUntil time.Time
	lastFailure  time.Time
	// logged is when the last log line was written; unlogged counts the
	// failures since.
	logged   time.Time
	unlogged int
}

// New returns a Limiter.
func New(opts Options) *Limiter {
	l := &Limiter{what: opts.What, log: opts.Logger, now: opts.Now, max: opts.MaxAddresses,
		byAddr: map[netip.Prefix]*list.Element{}, order: list.New()}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.max <= 0 {
		l.max = MaxAddresses
	}
	return l
}

// Blocked reports how long r's address is still refused, or 0 when it may
// try a token. A blocked address is refused even with the right token:
// otherwise the guessing would go on, only its answers withheld.
func (l *Limiter) Blocked(r *http.Request) time.Duration {
	addr := clientOf(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.byAddr[addr]
	if e == nil {
		return 0
	}
	return max(e.Value.(*client).blockedUntil.Sub(l.now()), 0)
}

// Failed records a wrong token from r's address.
func (l *Limiter) Failed(r *http.Request) {
	addr := clientOf(r)
	now := l.now()
	l.mu.Lock()
	c := l.client(addr, now)
	c.lastFailure = now
	switch {
	case c.block > 0 && !now.Before(c.blockedUntil):
		// A wrong token after a block: the guessing goes on.
		c.block = min(2*c.block, MaxBlock)
		c.blockedUntil = now.Add(c.block)
		c.since, c.failures = now, 0
	case now.Sub(c.since) >= Window:
		c.since, c.failures = now, 1
	default:
		c.failures++
	}
	if c.block == 0 && c.failures >= Failures {
		c.block = FirstBlock
		c.blockedUntil = now.Add(c.block)
	}
	c.unlogged++
	var count int
	if now.Sub(c.logged) >= LogEvery {
		count, c.logged, c.unlogged = c.unlogged, now, 0
	}
	until := c.blockedUntil
	l.mu.Unlock()
	if count > 0 {
		args := []any{"what", l.what, "addr", addrText(addr, r), "failures", count}
		if until.After(now) {
			args = append(args, "blocked_for", until.Sub(now).Round(time.Second).String())
		}
		l.log.Warn("wrong token", args...)
	}
}

// Succeeded forgets r's address: a right token ends its record.
func (l *Limiter) Succeeded(r *http.Request) {
	addr := clientOf(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.byAddr[addr]; e != nil {
		l.order.Remove(e)
		delete(l.byAddr, addr)
	}
}

// Tracked returns how many addresses the limiter remembers.
func (l *Limiter) Tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.order.Len()
}

// client returns addr's entry, moved to the back of the order, creating
// it (and forgetting the oldest when full) if needed. An entry idle for
// MaxBlock since its last failure and its block's end starts over. l.mu
// is held.
func (l *Limiter) client(addr netip.Prefix, now time.Time) *client {
	if e := l.byAddr[addr]; e != nil {
		c := e.Value.(*client)
		if now.Sub(c.lastFailure) < MaxBlock || now.Sub(c.blockedUntil) < MaxBlock {
			l.order.MoveToBack(e)
			return c
		}
		l.order.Remove(e)
		delete(l.byAddr, addr)
	}
	for l.order.Len() >= l.max {
		oldest := l.order.Front()
		l.order.Remove(oldest)
		delete(l.byAddr, oldest.Value.(*client).addr)
	}
	c := &client{addr: addr, since: now}
	l.byAddr[addr] = l.order.PushBack(c)
	return c
}

// clientOf returns the address r came from: its TCP peer, an IPv6 one as
// its /64. Peers without an IP address (a Unix socket) share one entry,
// so that they are limited too.
func clientOf(r *http.Request) netip.Prefix {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	ip = ip.Unmap().WithZone("")
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits) // never fails: bits fits the address
	return p
}

// addrText is how a log line names addr: an IPv4 address alone, an IPv6
// client as its /64, a peer without an IP address as it came.
func addrText(addr netip.Prefix, r *http.Request) string {
	switch {
	case !addr.IsValid():
		return r.RemoteAddr
	case addr.Addr().Is4():
		return addr.Addr().String()
	}
	return addr.String()
}

// Refuse answers the headers of a 429 for a block of d: Retry-After in
// whole seconds, rounded up. The caller writes the status and body.
func Refuse(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int((d+time.Second-1)/time.Second)))
}
