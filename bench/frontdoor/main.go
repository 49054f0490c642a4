package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "frontdoor:", err)
		os.Exit(1)
	}
}

// report is what a run prints.
type report struct {
	Mode string `json:"mode"`
	// Opened counts connections opened, reopenings included; DialErrors
	// the dials that failed.
	Opened     int64 `json:"opened"`
	DialErrors int64 `json:"dial_errors"`
	// Closed counts connections the server closed without answering a
	// request in progress; Answered the answers, by status.
	Closed   int64          `json:"closed_by_server"`
	Answered map[string]int `json:"answered,omitempty"`
	// MaxOpen is the most connections open at once.
	MaxOpen int64 `json:"max_open"`
}

// counters are a run's, shared by its connections.
type counters struct {
	opened, dialErrors, closed, open, maxOpen atomic.Int64
	mu                                        sync.Mutex
	answered                                  map[string]int
}

func (c *counters) answer(status int) {
	c.mu.Lock()
	c.answered[strconv.Itoa(status)]++
	c.mu.Unlock()
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "idle" && args[0] != "slow" && args[0] != "slowsmall") {
		return errors.New("usage: frontdoor idle|slow|slowsmall [flags]; -h for the flags")
	}
	mode := args[0]
	fs := flag.NewFlagSet("frontdoor "+mode, flag.ContinueOnError)
	addr := fs.String("addr", "", "idle: the gateway's host:port")
	target := fs.String("url", "", "slow: the URL to post to, http://host:port/in/source")
	n := fs.Int("n", 1000, "connections to keep open")
	d := fs.Duration("d", 20*time.Second, "how long to keep them")
	reopen := fs.Duration("reopen", time.Second, "pause before a connection the server closed or answered is opened again")
	defaultSize := 1<<20 - 1<<10
	if mode == "slowsmall" {
		defaultSize = 100
	}
	size := fs.Int("size", defaultSize, "slow, slowsmall: body bytes each request announces")
	rate := fs.Int("rate", 4<<10, "slow: body bytes a second each request sends")
	every := fs.Duration("every", 5*time.Second, "slowsmall: the pause between the bytes of each body")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *d)
	defer cancel()
	c := &counters{answered: map[string]int{}}
	var conn func(context.Context) error
	switch mode {
	case "idle":
		if *addr == "" {
			return errors.New("idle needs -addr")
		}
		conn = func(ctx context.Context) error { return idle(ctx, c, *addr) }
	case "slow":
		u, err := url.Parse(*target)
		if err != nil || u.Host == "" {
			return fmt.Errorf("slow needs -url http://host:port/path: %q", *target)
		}
		conn = func(ctx context.Context) error { return slow(ctx, c, u, *size, *rate) }
	case "slowsmall":
		u, err := url.Parse(*target)
		if err != nil || u.Host == "" {
			return fmt.Errorf("slowsmall needs -url http://host:port/path: %q", *target)
		}
		conn = func(ctx context.Context) error { return trickle(ctx, c, u, *size, 1, *every) }
	}
	var wg sync.WaitGroup
	for range *n {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := conn(ctx); err != nil && ctx.Err() == nil {
					c.dialErrors.Add(1)
				}
				select {
				case <-ctx.Done():
				case <-time.After(*reopen):
				}
			}
		})
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return json.NewEncoder(stdout).Encode(report{Mode: mode, Opened: c.opened.Load(), DialErrors: c.dialErrors.Load(),
		Closed: c.closed.Load(), Answered: c.answered, MaxOpen: c.maxOpen.Load()})
}

// dial opens one connection, closed when ctx ends.
func dial(ctx context.Context, c *counters, addr string) (net.Conn, func(), error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	c.opened.Add(1)
	for open := c.open.Add(1); ; {
		peak := c.maxOpen.Load()
		if open <= peak || c.maxOpen.CompareAndSwap(peak, open) {
			break
		}
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	return conn, func() {
		stop()
		conn.Close()
		c.open.Add(-1)
	}, nil
}

// idle opens a connection, makes one keep-alive request on it and waits
// until the server closes it or ctx ends.
func idle(ctx context.Context, c *counters, addr string) error {
	conn, done, err := dial(ctx, c, addr)
	if err != nil {
		return err
	}
	defer done()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: frontdoor\r\n\r\n"); err != nil {
		c.closed.Add(1)
		return nil
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		if ctx.Err() == nil {
			c.closed.Add(1)
		}
		return nil
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.answer(resp.StatusCode)
	if resp.Close {
		return nil
	}
	// Idle: the next read ends when the server closes the connection.
	if _, err := r.ReadByte(); err != nil && ctx.Err() == nil {
		c.closed.Add(1)
	}
	return nil
}

// slow posts a body of size bytes at rate bytes a second until the server
// answers or closes the connection, or ctx ends.
func slow(ctx context.Context, c *counters, u *url.URL, size, rate int) error {
	const tick = 100 * time.Millisecond
	return trickle(ctx, c, u, size, max(rate/int(time.Second/tick), 1), tick)
}

// trickle posts a body of size bytes, chunk bytes every tick, until the
// server answers or closes the connection, or ctx ends.
func trickle(ctx context.Context, c *counters, u *url.URL, size, chunkSize int, tick time.Duration) error {
	conn, done, err := dial(ctx, c, u.Host)
	if err != nil {
		return err
	}
	defer done()
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			if ctx.Err() == nil {
				c.closed.Add(1)
			}
			return
		}
		resp.Body.Close()
		c.answer(resp.StatusCode)
	}()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: frontdoor\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", u.RequestURI(), size)
	chunk := make([]byte, chunkSize)
	for i := range chunk {
		chunk[i] = 'a'
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for sent := 0; sent < size; sent += len(chunk) {
		select {
		case <-answered:
			return nil
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := conn.Write(chunk[:min(len(chunk), size-sent)]); err != nil {
			break
		}
	}
	select {
	case <-answered:
	case <-ctx.Done():
	}
	return nil
}
