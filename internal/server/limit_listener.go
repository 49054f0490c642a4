package server

import (
	"container/list"
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
// connection beyond the limit by closing the connection idle longest
// (between keep-alive requests, or opened and silent), so that thousands
// of idle connections cannot lock senders out; only when every
// connection is in a request does it answer the new one 503 with
// Retry-After and close it, so that the sender learns at once to come
// back later.
type limitListener struct {
	net.Listener
	max       int64
	open      atomic.Int64
	lingering atomic.Int64
	busy      []byte
	// turnedAway is called for each connection answered 503, idleClosed
	// for each idle one closed to make room.
	turnedAway, idleClosed func()

	mu sync.Mutex
	// idle holds the open connections not in a request, the one idle
	// longest first.
	idle list.List
}

// newLimitListener keeps at most max connections of ln open and calls
// turnedAway for each connection it answers 503 and idleClosed for each
// idle one it closes to make room. The http.Server that serves it must
// report to its ConnState.
func newLimitListener(ln net.Listener, max int, turnedAway, idleClosed func()) *limitListener {
	retry := strconv.Itoa(int(busyRetryAfter / time.Second))
	body := "too many connections, retry later\n"
	return &limitListener{Listener: ln, max: int64(max), turnedAway: turnedAway, idleClosed: idleClosed, busy: []byte("HTTP/1.1 503 Service Unavailable\r\n" +
		"Retry-After: " + retry + "\r\nContent-Type: text/plain; charset=utf-8\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body)}
}

// Accept returns the next connection within the limit, making room by
// closing the connection idle longest; the ones that find no room are
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
		if victim := l.oldestIdle(); victim != nil {
			// Its close gives its slot to c.
			victim.Close()
			l.idleClosed()
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
	lc.elem = l.idle.PushBack(lc)
	l.mu.Unlock()
	return lc
}

// oldestIdle takes the connection idle longest off the idle list; nil
// when every connection is in a request.
func (l *limitListener) oldestIdle() *limitConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.idle.Front()
	if e == nil {
		return nil
	}
	lc := e.Value.(*limitConn)
	l.idle.Remove(e)
	lc.elem = nil
	return lc
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
}

func (c *limitConn) Close() error {
	c.l.mu.Lock()
	first := !c.closed
	c.closed = true
	if c.elem != nil {
		c.l.idle.Remove(c.elem)
		c.elem = nil
	}
	c.l.mu.Unlock()
	if first {
		c.l.open.Add(-1)
	}
	return c.Conn.Close()
}
