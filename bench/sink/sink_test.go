package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

var base = time.Unix(1700000000, 0)

func setup(t *testing.T) (http.Handler, *clock) {
	t.Helper()
	c := &clock{t: base}
	return newSink(c.now).handler(), c
}

// post delivers body with webhook-id id and returns the status.
func post(h http.Handler, path, id, body string) int {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if id != "" {
		req.Header.Set(headerWebhookID, id)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// stamped is a body sent to the gateway at base + sent.
func stamped(sent time.Duration) string {
	return fmt.Sprintf(`{"id":"x","sent_ns":%d,"order":"o-1","seq":1}`, base.Add(sent).UnixNano())
}

func getStats(t *testing.T, h http.Handler) stats {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/stats", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /stats = %d", rec.Code)
	}
	var st stats
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("GET /stats body %q: %v", rec.Body.String(), err)
	}
	return st
}

func TestStats(t *testing.T) {
	t.Parallel()
	h, c := setup(t)
	if st := getStats(t, h); st != (stats{}) {
		t.Errorf("empty sink: %+v, want zero", st)
	}
	// 100 events sent at base; event i arrives at base + (i+1) ms, so the
	// latencies are 1..100 ms. Event 7 is delivered twice.
	for i := range 100 {
		c.set(base.Add(time.Duration(i+1) * time.Millisecond))
		if code := post(h, "/hooks/app", fmt.Sprintf("ev-%d", i), stamped(0)); code != http.StatusNoContent {
			t.Fatalf("delivery %d = %d, want 204", i, code)
		}
	}
	c.set(base.Add(100 * time.Millisecond))
	post(h, "/hooks/app", "ev-7", stamped(0))
	// An unstamped delivery counts but has no latency.
	c.set(base.Add(201 * time.Millisecond))
	post(h, "/hooks/other", "ev-100", `{"id":"plain"}`)

	st := getStats(t, h)
	want := stats{
		Deliveries: 102, Distinct: 101, Unstamped: 1,
		FirstAt: base.Add(time.Millisecond).Format(time.RFC3339Nano),
		LastAt:  base.Add(201 * time.Millisecond).Format(time.RFC3339Nano),
		Seconds: 0.2, PerSec: 102 / 0.2,
		P50Ms: 51, P99Ms: 100, MaxMs: 100,
	}
	if st != want {
		t.Errorf("stats\n got %+v\nwant %+v", st, want)
	}
}

// A batch counts one delivery per event, with each event's latency.
func TestBatch(t *testing.T) {
	t.Parallel()
	h, c := setup(t)
	c.set(base.Add(time.Second))
	body := fmt.Sprintf(`[{"webhook_id":"a","payload":%s},{"webhook_id":"b","payload":%s},{"webhook_id":"a","payload":{"id":"plain"}}]`,
		stamped(750*time.Millisecond), stamped(500*time.Millisecond))
	req := httptest.NewRequest(http.MethodPost, "/hooks/app", strings.NewReader(body))
	req.Header.Set(headerWebhookID, "batch_1")
	req.Header.Set(headerBatchCount, "3")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNoContent {
		t.Fatalf("batch = %d, want 204", rec.Code)
	}
	st := getStats(t, h)
	if st.Deliveries != 3 || st.Batches != 1 || st.Distinct != 2 || st.Unstamped != 1 || st.MaxMs != 500 || st.P50Ms != 250 {
		t.Errorf("after a batch of 3: %+v, want 3 deliveries of 2 events in 1 batch, latencies 250 and 500 ms", st)
	}
}

func TestLatencyFromSendTime(t *testing.T) {
	t.Parallel()
	h, c := setup(t)
	c.set(base.Add(5 * time.Second))
	post(h, "/hooks/app", "a", stamped(4*time.Second+750*time.Millisecond))
	if st := getStats(t, h); st.P50Ms != 250 || st.MaxMs != 250 || st.PerSec != 0 {
		t.Errorf("one delivery 250 ms after its send: %+v", st)
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	h, c := setup(t)
	post(h, "/hooks/app", "a", stamped(-time.Second))
	c.set(base.Add(time.Second))
	post(h, "/hooks/app", "b", stamped(0))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/reset", nil))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("POST /reset = %d, want 204", rec.Code)
	}
	if st := getStats(t, h); st != (stats{}) {
		t.Errorf("after reset: %+v, want zero", st)
	}
	c.set(base.Add(3 * time.Second))
	post(h, "/hooks/app", "a", stamped(2*time.Second))
	st := getStats(t, h)
	if st.Deliveries != 1 || st.Distinct != 1 || st.MaxMs != 1000 || st.FirstAt != base.Add(3*time.Second).Format(time.RFC3339Nano) {
		t.Errorf("first delivery after reset: %+v", st)
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	h, _ := setup(t)
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{http.MethodPost, "/hooks/app", strings.Repeat("x", maxBody+1), http.StatusRequestEntityTooLarge},
		{http.MethodGet, "/hooks/app", "", http.StatusMethodNotAllowed},
		{http.MethodPost, "/other", "", http.StatusNotFound},
		{http.MethodGet, "/healthz", "", http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		if rec.Code != tc.want {
			t.Errorf("%s %s (%d bytes) = %d, want %d", tc.method, tc.path, len(tc.body), rec.Code, tc.want)
		}
	}
	if st := getStats(t, h); st.Deliveries != 0 {
		t.Errorf("rejected requests counted: %+v", st)
	}
}

func TestConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	h, _ := setup(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				// Every goroutine delivers the same 50 ids: 8 copies each.
				post(h, "/hooks/app", fmt.Sprintf("ev-%d", i), stamped(time.Duration(-g)*time.Millisecond))
			}
		})
	}
	wg.Wait()
	if st := getStats(t, h); st.Deliveries != 400 || st.Distinct != 50 || st.Unstamped != 0 || st.MaxMs != 7 {
		t.Errorf("8 x 50 deliveries of 50 ids: %+v", st)
	}
}

// waitHeld waits until n deliveries are held, failing after 10 s.
func waitHeld(t *testing.T, h http.Handler, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for getStats(t, h).Held != n {
		if time.Now().After(deadline) {
			t.Fatalf("held never reached %d", n)
		}
		runtime.Gosched()
	}
}

func TestHoldAndRelease(t *testing.T) {
	t.Parallel()
	h, c := setup(t)
	for _, path := range []string{"/hold", "/hold"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		if rec.Code != http.StatusNoContent {
			t.Fatalf("POST %s = %d, want 204", path, rec.Code)
		}
	}
	codes := make(chan int, 2)
	for _, id := range []string{"a", "b"} {
		go func() { codes <- post(h, "/hooks/app", id, stamped(0)) }()
	}
	waitHeld(t, h, 2)
	if st := getStats(t, h); st.Deliveries != 0 {
		t.Fatalf("held deliveries counted: %+v", st)
	}
	// A held delivery is received at its release.
	c.set(base.Add(3 * time.Second))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/release", nil))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("POST /release = %d, want 204", rec.Code)
	}
	for range 2 {
		if code := <-codes; code != http.StatusNoContent {
			t.Errorf("released delivery = %d, want 204", code)
		}
	}
	if code := post(h, "/hooks/app", "c", stamped(0)); code != http.StatusNoContent {
		t.Errorf("delivery after release = %d, want 204", code)
	}
	st := getStats(t, h)
	if st.Deliveries != 3 || st.Held != 0 || st.P50Ms != 3000 || st.FirstAt != base.Add(3*time.Second).Format(time.RFC3339Nano) {
		t.Errorf("after release: %+v, want 3 deliveries received at +3s", st)
	}
}

func TestHeldRequestEnds(t *testing.T) {
	t.Parallel()
	s := newSink(time.Now)
	s.hold()
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/hooks/app", strings.NewReader(stamped(0)))
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		s.handler().ServeHTTP(rec, req)
		close(done)
	}()
	waitHeld(t, s.handler(), 1)
	cancel()
	<-done
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("held request whose context ended = %d, want 503", rec.Code)
	}
	if st := s.stats(); st.Deliveries != 0 || st.Held != 0 {
		t.Errorf("after an abandoned held delivery: %+v, want nothing counted", st)
	}
}
