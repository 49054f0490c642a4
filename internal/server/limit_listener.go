package server

import (
	"container/list"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// busyRetryAfter is what a sender turned away for lack of connections is
// told to wait.
const busyRetryAfter = 5 * time.Second

// busyLinger bounds how long a turned-away connection is kept to read what
// the sender already wrote; closing with unread data resets the
// connection, and the sender might never see the 503.
const busyLinger = time.Second

// maxLingering bounds the turned-away connections kept lingering at once;
// beyond it they are closed at once, so a flood cannot hold descriptors
// through them either.
const maxLingering = 64

// limitListener keeps at most max connections open. Unlike
// golang.org/x/net/netutil.LimitListener, which stops accepting (and lets
// the kernel's backlog fill until senders time out), it makes room for a
// connection beyond the limit by closing one that holds its slot without
// sending: idle (between keep-alive requests, or opened and silent), or
// in a body arriving slower than minRate, the one furthest behind that
// rate first (see [limitListener.victim]), so that neither thousands of
// idle connections nor thousands of bodies trickling in a byte at a time
// can lock senders out. Only when every connection is in a request that
// keeps pace does it answer the new one 503 with Retry-After and close
// it, so that the sender learns at once to come back later.
type limitListener struct {
	net.Listener
	max       int64
	open      atomic.Int64
	lingering atomic.Int64
	busy      []byte
	// minRate is the body rate, in bytes a second, below which a body is
	// behind; zero never closes a connection in a request.
	minRate int64
	// turnedAway is called for each connection answered 503, idleClosed
	// for each idle one closed to make room, slowClosed for each one
	// closed in the middle of a body behind minRate.
	turnedAway, idleClosed, slowClosed func()
	now                                func() time.Time

	mu sync.Mutex
	// idle holds the open connections not in a request, the one idle
	// longest first.
	idle list.List
	// inBody holds the connections whose request body is being read.
	inBody map[*limitConn]struct{}
}

// newLimitListener keeps at most max connections of ln open and calls
// turnedAway for each connection it answers 503, idleClosed for each
// idle one it closes to make room and slowClosed for each one it closes
// because its body arrives slower than minRate bytes a second. The
// http.Server that serves it must report to its ConnState, give its
// connections' contexts [limitListener.connContext] and serve through
// [limitListener.watchBodies].
func newLimitListener(ln net.Listener, max int, minRate int64, turnedAway, idleClosed, slowClosed func()) *limitListener {
	retry := strconv.Itoa(int(busyRetryAfter / time.Second))
	body := "too many connections, retry later\n"
	return &limitListener{Listener: ln, max: int64(max), minRate: minRate, turnedAway: turnedAway, idleClosed: idleClosed,
		slowClosed: slowClosed, now: time.Now, inBody: make(map[*limitConn]struct{}), busy: []byte("HTTP/1.1 503 Service Unavailable\r\n" +
			"Retry-After: " + retry + "\r\nContent-Type: text/plain; charset=utf-8\r\n" +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body)}
}

// Accept returns the next connection within the limit, making room by
// closing the connection idle longest or the body furthest behind; the ones that find no room are
// answered and closed on the way.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return l.track(c), nil
		}
		if victim, slow := l.victim(); victim != nil {
			// Its close gives its slot to c.
			victim.Close()
			if slow {
				l.slowClosed()
			} else {
				l.idleClosed()
			}
			return l.track(c), nil
		}
		l.open.Add(-1)
		l.turnedAway()
		l.turnAway(c)
	}
}

// track wraps c, counted in open, and lists it idle until the server
// reports it in a request.
func (l *limitListener) track(c net.Conn) *limitConn {
	lc := &limitConn{Conn: c, l: l}
	l.mu.Lock()
	lc.idleSince = l.now()
	lc.elem = l.idle.PushBack(lc)
	l.mu.Unlock()
	return lc
}

// victim takes the connection to close to make room off its list: the
// one owing the most bytes at minRate, an idle one owing what minRate
// would have delivered since it went idle, one in a body what it would
// have delivered since the body began less what arrived; slow reports
// that it is in a body. A sender that writes its request at once owes
// nothing; a body trickling a byte every few seconds owes more with every
// millisecond, and so does a connection left idle. Without minRate it is
// the connection idle longest. nil when none is idle and every body keeps
// pace.
func (l *limitListener) victim() (victim *limitConn, slow bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var most int64
	if e := l.idle.Front(); e != nil {
		victim = e.Value.(*limitConn)
		most = int64(now.Sub(victim.idleSince).Seconds() * float64(l.minRate))
	}
	if l.minRate > 0 {
		for lc := range l.inBody {
			due := int64(now.Sub(lc.bodyStart).Seconds() * float64(l.minRate))
			if owed := due - lc.received.Load(); owed > most {
				victim, most, slow = lc, owed, true
			}
		}
	}
	switch {
	case slow:
		delete(l.inBody, victim)
	case victim != nil:
		l.idle.Remove(victim.elem)
		victim.elem = nil
	}
	return victim, slow
}

// connContext is the serving http.Server's ConnContext: it lets
// watchBodies find a request's connection.
func (l *limitListener) connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitConn); ok {
		return context.WithValue(ctx, limitConnKey{}, lc)
	}
	return ctx
}

// limitConnKey is the context key of a request's *limitConn.
type limitConnKey struct{}

// watchBodies lists a request's connection as in a body while h reads
// it, counting what arrives, so that Accept can find the bodies behind
// minRate.
func (l *limitListener) watchBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lc, ok := r.Context().Value(limitConnKey{}).(*limitConn)
		if !ok || l.minRate <= 0 || r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		l.mu.Lock()
		lc.bodyStart = l.now()
		lc.received.Store(0)
		if !lc.closed {
			l.inBody[lc] = struct{}{}
		}
		l.mu.Unlock()
		done := sync.OnceFunc(func() {
			l.mu.Lock()
			delete(l.inBody, lc)
			l.mu.Unlock()
		})
		defer done()
		body := &watchedBody{ReadCloser: r.Body, received: &lc.received, done: done}
		r.Body = body
		h.ServeHTTP(closeUnread{ResponseWriter: w, body: body}, r)
		if !body.ended.Load() {
			// The server reads what is left of a body after the answer,
			// to keep the connection; this one is closed instead.
			http.NewResponseController(w).SetReadDeadline(time.Now())
		}
	})
}

// watchedBody counts the bytes of a body as they are read and calls done
// at its end.
type watchedBody struct {
	io.ReadCloser
	received *atomic.Int64
	done     func()
	// ended is set once a read returned an error: the body's end or its
	// failure, after which nothing of it is left to read.
	ended atomic.Bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.received.Add(int64(n))
	if err != nil {
		b.ended.Store(true)
		b.done()
	}
	return n, err
}

// closeUnread answers a request whose body was not read to its end (an
// unknown source or path, 415, a full pending budget) with Connection:
// close, and watchBodies ends its reading once the handler returns.
// Without them the server would read what is left of the body after the
// answer, to keep the connection, under the minute-long read timeout and
// unwatched: a sender trickling small bodies to a wrong path would hold
// its slot all that time, out of reach of the room-making in Accept.
type closeUnread struct {
	http.ResponseWriter
	body *watchedBody
}

func (w closeUnread) WriteHeader(code int) {
	w.closeIfUnread()
	w.ResponseWriter.WriteHeader(code)
}

func (w closeUnread) Write(p []byte) (int, error) {
	w.closeIfUnread()
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w closeUnread) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w closeUnread) closeIfUnread() {
	if !w.body.ended.Load() {
		w.Header().Set("Connection", "close")
	}
}

// connState is the serving http.Server's ConnState: a connection between
// requests goes to the back of the idle list, one in a request leaves it.
func (l *limitListener) connState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case st == http.StateIdle && !lc.closed:
		lc.idleSince = l.now()
		if lc.elem != nil {
			l.idle.MoveToBack(lc.elem)
		} else {
			lc.elem = l.idle.PushBack(lc)
		}
	case st != http.StateNew && lc.elem != nil:
		l.idle.Remove(lc.elem)
		lc.elem = nil
	}
}

// turnAway answers c 503 and closes it without holding up Accept.
func (l *limitListener) turnAway(c net.Conn) {
	if l.lingering.Add(1) > maxLingering {
		l.lingering.Add(-1)
		c.Close()
		return
	}
	go func() {
		defer l.lingering.Add(-1)
		defer c.Close()
		c.SetDeadline(time.Now().Add(busyLinger))
		if _, err := c.Write(l.busy); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

// limitConn gives its slot back and leaves the idle list when it is
// closed, once.
type limitConn struct {
	net.Conn
	l *limitListener
	// elem is its place on l.idle, nil when it is not there; closed is
	// set on Close. Both are guarded by l.mu.
	elem   *list.Element
	closed bool
	// idleSince is when it last went on l.idle, guarded by l.mu.
	idleSince time.Time
	// bodyStart is when its request's body began to be read, guarded by
	// l.mu; received counts the bytes of that body read so far.
	bodyStart time.Time
	received  atomic.Int64
}

// CloseWrite ends the sending half, as the server does before it closes
// a connection it answered with Connection: close, so the sender sees the
// end of the answer at once.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *limitConn) Close() error {
	c.l.mu.Lock()
	first := !c.closed
	c.closed = true
	if c.elem != nil {
		c.l.idle.Remove(c.elem)
		c.elem = nil
	}
	delete(c.l.inBody, c)
	c.l.mu.Unlock()
	if first {
		c.l.open.Add(-1)
	}
	return c.Conn.Close()
}
