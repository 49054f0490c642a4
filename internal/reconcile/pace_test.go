package reconcile

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// At a rate of one request a minute, the first request goes at once and
// each later one waits for its turn, a minute after the one before.
func TestPacerSpacesRequests(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served.Add(1) }))
	defer srv.Close()
	var waits []time.Duration
	p := &pacer{interval: time.Minute, next: srv.Client().Transport,
		sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
	client := &http.Client{Transport: p}
	for range 3 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// The second waits about a minute, the third about two: each a
	// minute after the turn before it, less the time the requests took.
	if len(waits) != 2 || waits[0] <= 50*time.Second || waits[0] > time.Minute ||
		waits[1] <= 110*time.Second || waits[1] > 2*time.Minute || served.Load() != 3 {
		t.Fatalf("waits %v for 3 requests (%d served), want about 1m and 2m", waits, served.Load())
	}
}
