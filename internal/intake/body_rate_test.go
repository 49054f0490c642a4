package intake_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/source"
)

// rateServer serves intake with the Standard Webhooks source, maxBody as
// both the body limit and the pending budget, and a minimum body rate
// after grace; it returns the server and the source, to sign with.
func rateServer(t *testing.T, maxBody, rate int64, grace time.Duration) (*httptest.Server, *source.Source) {
	t.Helper()
	src, err := source.New(testSources()[0], config.Default().Dedupe)
	if err != nil {
		t.Fatal(err)
	}
	c := newCommitter(openStore(t), intake.CommitterOptions{})
	srv := httptest.NewServer(intake.NewHandler(intake.Options{Sources: []*source.Source{src}, Committer: c,
		MaxBody: maxBody, MaxPendingBody: maxBody, MinBodyRate: rate, BodyGrace: grace}))
	t.Cleanup(func() {
		srv.Close()
		c.Close()
	})
	return srv, src
}

// signedPost sends body to the source, signed, at chunk bytes per tick
// (all at once when tick is zero), and returns the answer's status.
func signedPost(t *testing.T, url string, src *source.Source, body []byte, chunk int, tick time.Duration) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/in/std", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("webhook-id", fmt.Sprintf("msg_%d_%d", len(body), time.Now().UnixNano()))
	if err := src.Signer().Sign(req, body); err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	if tick == 0 {
		req.Body = io.NopCloser(bytes.NewReader(body))
	} else {
		pr, pw := io.Pipe()
		go func() {
			ticker := time.NewTicker(tick)
			defer ticker.Stop()
			for rest := body; len(rest) > 0; <-ticker.C {
				n := min(chunk, len(rest))
				if _, err := pw.Write(rest[:n]); err != nil {
					return
				}
				rest = rest[n:]
			}
			pw.Close()
		}()
		req.Body = pr
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Issue 19, section 1: a body trickling in a byte at a time held its
// connection (and its share of the pending budget) until the server's
// read timeout. Once it is body_grace behind min_body_rate it is answered
// 408, its connection closed and its share given back.
func TestSlowBodyTimesOut(t *testing.T) {
	t.Parallel()
	const maxBody = 1024
	srv, src := rateServer(t, maxBody, 4<<10, 300*time.Millisecond)
	slow, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	// It declares the whole budget, so that nothing else is read while
	// it holds its share.
	fmt.Fprintf(slow, "POST /in/std HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\na", maxBody)
	stop := make(chan struct{})
	stopWriting := sync.OnceFunc(func() { close(stop) })
	defer stopWriting()
	go func() {
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
				if _, err := slow.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}()
	slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(slow)
	// The sender stops writing once the answer arrives: the bytes it
	// writes after the server stopped reading make the server's close a
	// reset, which may drop the answer before it is read.
	if _, err := r.Peek(1); err != nil {
		t.Fatalf("the slow body: %v, want a 408 (the server kept reading it)", err)
	}
	stopWriting()
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("the slow body: %v, want a 408", err)
	}
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(msg), "slower than 4096 bytes a second") {
		t.Fatalf("the slow body: %d %q, want 408 naming the rate", resp.StatusCode, msg)
	}
	// Closed: the end of the stream, or a reset for bytes written while
	// the answer was on its way.
	if n, err := r.Read(make([]byte, 1)); n != 0 || (err != io.EOF && !errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("after the 408: read %d, %v; want the connection closed", n, err)
	}
	// Its share of the pending budget is back: a signed event is read
	// and accepted.
	if st := signedPost(t, srv.URL, src, []byte(`{"type":"invoice.paid","id":"inv_1"}`), 0, 0); st != http.StatusAccepted {
		t.Fatalf("after the slow body: %d, want 202 (its share of the budget given back)", st)
	}
}

// Issue 19, section 1: the minimum rate must not turn away a slow but
// steady link: 1 MiB at 64 KiB/s (16 s) is accepted with the defaults.
func TestSlowLinkLargeBodyAccepted(t *testing.T) {
	t.Parallel()
	const size = 1 << 20
	srv, src := rateServer(t, 2*size, int64(config.DefaultMinBodyRate), time.Duration(config.DefaultBodyGrace))
	pad := strings.Repeat("x", size-64)
	body := []byte(fmt.Sprintf(`{"type":"file.uploaded","id":"f_1","data":"%s"}`, pad))
	body = append(body, bytes.Repeat([]byte(" "), size-len(body))...)
	// 16 KiB every quarter of a second is 64 KiB a second.
	if st := signedPost(t, srv.URL, src, body, 16<<10, 250*time.Millisecond); st != http.StatusAccepted {
		t.Fatalf("1 MiB at 64 KiB/s: %d, want 202", st)
	}
}
