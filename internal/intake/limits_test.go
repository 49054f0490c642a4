package intake_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/metrics"
	"github.com/hookgate/hookgate/internal/source"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// budgetServer serves intake with the Stripe source, maxBody and
// maxPending on a fresh store, counting into the metrics it returns.
func budgetServer(t *testing.T, maxBody, maxPending int64) (*httptest.Server, *metrics.Metrics) {
	t.Helper()
	src, err := source.New(testSources()[2], config.Default().Dedupe)
	if err != nil {
		t.Fatal(err)
	}
	c := newCommitter(openStore(t), intake.CommitterOptions{})
	m := metrics.New()
	srv := httptest.NewServer(intake.NewHandler(intake.Options{Sources: []*source.Source{src}, Committer: c,
		MaxBody: maxBody, MaxPendingBody: maxPending, Metrics: m}))
	t.Cleanup(func() {
		srv.Close()
		c.Close()
	})
	return srv, m
}

// Issue 9, finding 2: bodies held before authentication share one budget.
// While a slow sender holds it, another request is answered 503 with
// Retry-After before its body is read; once the slow body ends (401: it
// is unsigned) the budget is back.
func TestPendingBodyBudget(t *testing.T) {
	t.Parallel()
	const maxBody = 1024
	srv, m := budgetServer(t, maxBody, maxBody)

	slow, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "POST /in/stripe HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", maxBody, strings.Repeat("a", 10))

	post := func() *http.Response {
		resp, err := http.Post(srv.URL+"/in/stripe", "application/json", bytes.NewReader([]byte(`{"id":"evt_1"}`)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// The slow request holds the budget once the handler has started it.
	deadline := time.Now().Add(10 * time.Second)
	var resp *http.Response
	unauthenticated := 0.0
	for resp = post(); resp.StatusCode != http.StatusServiceUnavailable; resp = post() {
		unauthenticated++
		if time.Now().After(deadline) {
			t.Fatalf("while a slow body holds the budget: %d, want 503", resp.StatusCode)
		}
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	// The operator sees which limit fired, and the refusal is no store
	// error of the source.
	if got := testutil.ToFloat64(m.Busy.WithLabelValues(metrics.BusyPendingBody)); got != 1 {
		t.Errorf("hookgate_busy_total{reason=pending_body} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.Received.WithLabelValues("stripe", metrics.ReceivedStoreError)); got != 0 {
		t.Errorf("store errors counted for the busy answer: %v", got)
	}
	fmt.Fprint(slow, strings.Repeat("a", maxBody-10))
	line, err := bufio.NewReader(slow).ReadString('\n')
	if err != nil || !strings.Contains(line, "401") {
		t.Fatalf("the slow request: %q %v, want 401", line, err)
	}
	if resp := post(); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after the slow body ended: %d, want 401 (the budget given back)", resp.StatusCode)
	}
}

// /readyz answers 503 while Ready fails, and each such answer is counted
// as hookgate_busy_total{reason="not_ready"}; ok again once Ready is.
func TestNotReadyCounted(t *testing.T) {
	t.Parallel()
	c := newCommitter(openStore(t), intake.CommitterOptions{})
	defer c.Close()
	m := metrics.New()
	var failing atomic.Bool
	failing.Store(true)
	srv := httptest.NewServer(intake.NewHandler(intake.Options{Committer: c, Metrics: m,
		Ready: func(context.Context) error {
			if failing.Load() {
				return errors.New("disk full")
			}
			return nil
		}}))
	defer srv.Close()
	readyz := func() int {
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 2 {
		if st := readyz(); st != http.StatusServiceUnavailable {
			t.Fatalf("/readyz while not ready: %d, want 503", st)
		}
	}
	failing.Store(false)
	if st := readyz(); st != http.StatusOK {
		t.Fatalf("/readyz once ready: %d, want 200", st)
	}
	if got := testutil.ToFloat64(m.Busy.WithLabelValues(metrics.BusyNotReady)); got != 2 {
		t.Errorf("hookgate_busy_total{reason=not_ready} = %v, want 2", got)
	}
}

// Slow senders of large bodies fill at most three quarters of the pending
// budget: with that share held, another large body is 503, and a small
// one is still read (401 here: it is unsigned).
func TestPendingBodyBudgetKeepsSmallShare(t *testing.T) {
	t.Parallel()
	const maxBody = 256 << 10 // larger than the bodies of the small share
	srv, _ := budgetServer(t, maxBody, 4*maxBody)

	// Three slow senders of maxBody fill the general share. One that was
	// turned away because a probe below held the budget at that moment
	// (it was answered, or closed) is sent again, so that the three end
	// up holding it whatever the scheduling.
	dialSlow := func() net.Conn {
		slow, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(slow, "POST /in/stripe HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\nab", maxBody)
		return slow
	}
	slows := []net.Conn{dialSlow(), dialSlow(), dialSlow()}
	defer func() {
		for _, c := range slows {
			c.Close()
		}
	}()
	holdSlow := func() {
		for i, c := range slows {
			c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
			var b [1]byte
			if _, err := c.Read(b[:]); err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
				continue // no answer: still held
			}
			c.Close()
			slows[i] = dialSlow()
		}
	}
	post := func(size int) int {
		resp, err := http.Post(srv.URL+"/in/stripe", "application/json", bytes.NewReader(bytes.Repeat([]byte("a"), size)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(60 * time.Second) // generous: a loaded machine may start the slow handlers late
	for holdSlow(); post(maxBody) != http.StatusServiceUnavailable; holdSlow() {
		if time.Now().After(deadline) {
			t.Fatal("a large body while three slow ones are held: never 503")
		}
	}
	for range 3 {
		if st := post(100); st != http.StatusUnauthorized {
			t.Fatalf("a small body while the large share is held: %d, want it read (401)", st)
		}
	}
}

// The pending-body budget is given back on every way out, not only after
// authentication: with a budget of one max_body, a body over max_body
// (413), one that does not decode (400) and one that decodes past
// max_body (413) each hold all of it while read, and the request after
// each is read (401: unsigned), not turned away 503.
func TestPendingBodyBudgetGivenBackOnErrors(t *testing.T) {
	t.Parallel()
	const maxBody = 1024
	srv, _ := budgetServer(t, maxBody, maxBody)
	post := func(body []byte, encoding string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/in/stripe", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if encoding != "" {
			req.Header.Set("Content-Encoding", encoding)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(bytes.Repeat([]byte("a"), 4*maxBody))
	zw.Close()
	for _, tc := range []struct {
		name     string
		body     []byte
		encoding string
		want     int
	}{
		{"a body over max_body", bytes.Repeat([]byte("a"), 2*maxBody), "", http.StatusRequestEntityTooLarge},
		{"a body that is not gzip", []byte("not gzip at all"), "gzip", http.StatusBadRequest},
		{"a body that decodes past max_body", bomb.Bytes(), "gzip", http.StatusRequestEntityTooLarge},
	} {
		for range 3 {
			if st := post(tc.body, tc.encoding); st != tc.want {
				t.Fatalf("%s: %d, want %d", tc.name, st, tc.want)
			}
		}
		if st := post([]byte(`{"id":"evt_1"}`), ""); st != http.StatusUnauthorized {
			t.Fatalf("after %s: %d, want 401 (read: the budget given back)", tc.name, st)
		}
	}
}

// /readyz answers within a second whatever Ready does: a check that hangs
// (a hung database; this one ignores its context) is not ready, and the
// probes that come while it hangs do not wait for it either.
func TestReadyzAnswersWhileReadyHangs(t *testing.T) {
	t.Parallel()
	c := newCommitter(openStore(t), intake.CommitterOptions{})
	defer c.Close()
	hang := make(chan struct{})
	// The check is given at most a second: how long /readyz may take,
	// whatever the check does with its context.
	budgets := make(chan time.Duration, 3)
	srv := httptest.NewServer(intake.NewHandler(intake.Options{Committer: c,
		Ready: func(ctx context.Context) error {
			dl, ok := ctx.Deadline()
			if !ok {
				dl = time.Now().Add(time.Hour)
			}
			budgets <- time.Until(dl)
			<-hang
			return nil
		}}))
	defer srv.Close()
	defer close(hang) // before the server closes: it waits for its handlers
	// Far above the one second: a probe that outlives it waited for the check.
	probe := &http.Client{Timeout: 5 * time.Second}
	for range 3 {
		resp, err := probe.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatalf("/readyz while the check hangs: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("/readyz while the check hangs: %d, want 503", resp.StatusCode)
		}
		if b := <-budgets; b > time.Second {
			t.Fatalf("/readyz gave its check %v, want at most a second", b)
		}
	}
}
