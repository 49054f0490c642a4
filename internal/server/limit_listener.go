package server

import (
	"io"
	"net"
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
// the kernel's backlog fill until senders time out), it accepts the
// connection beyond the limit, answers 503 with Retry-After and closes it,
// so a sender learns at once to come back later.
type limitListener struct {
	net.Listener
	max       int64
	open      atomic.Int64
	lingering atomic.Int64
	busy      []byte
	// turnedAway is called for each connection answered 503.
	turnedAway func()
}

// newLimitListener keeps at most max connections of ln open and calls
// turnedAway for each connection it answers 503.
func newLimitListener(ln net.Listener, max int, turnedAway func()) *limitListener {
	retry := strconv.Itoa(int(busyRetryAfter / time.Second))
	body := "too many connections, retry later\n"
	return &limitListener{Listener: ln, max: int64(max), turnedAway: turnedAway, busy: []byte("HTTP/1.1 503 Service Unavailable\r\n" +
		"Retry-After: " + retry + "\r\nContent-Type: text/plain; charset=utf-8\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body)}
}

// Accept returns the next connection within the limit; the ones beyond it
// are answered and closed on the way.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitConn{Conn: c, release: func() { l.open.Add(-1) }}, nil
		}
		l.open.Add(-1)
		l.turnedAway()
		l.turnAway(c)
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

// limitConn gives its slot back when it is closed, once.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
