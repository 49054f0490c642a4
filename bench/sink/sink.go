package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// maxBody bounds a delivery's body.
const maxBody = 1 << 20

// headerWebhookID names a delivery's event: hookgate sets it to the event
// key, the same on every attempt.
const headerWebhookID = "webhook-id"

// headerBatchCount marks a batch: a JSON array of events, each with its
// webhook_id and payload (docs/delivery.md#batches).
const headerBatchCount = "webhook-batch-count"

// sink counts deliveries and their latencies.
type sink struct {
	now func() time.Time
	// broker, when not empty, is the broker the sink consumes from
	// (scheme://host:port): hold and release are then refused, as the
	// sink cannot hold back a broker's messages.
	broker string

	mu sync.Mutex
	// gate, when not nil, holds deliveries until it is closed.
	gate        chan struct{}
	held        int
	deliveries  int
	batches     int
	unstamped   int
	ids         map[string]struct{}
	latencies   []time.Duration
	first, last time.Time
}

// newSink returns an empty sink that reads the time of receipt from now.
func newSink(now func() time.Time) *sink {
	return &sink{now: now, ids: make(map[string]struct{})}
}

func (s *sink) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/", s.deliver)
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.stats())
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, _ *http.Request) {
		s.reset()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /hold", s.httpOnly(s.hold))
	mux.HandleFunc("POST /release", s.httpOnly(s.release))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	return mux
}

// deliver records one delivery, or each event of a batch as a delivery,
// and answers 204. While the sink holds, it first waits for the release:
// the delivery counts as received then.
func (s *sink) deliver(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read request body", http.StatusBadRequest)
		return
	}
	if !s.pass(r) {
		http.Error(w, "request ended while held", http.StatusServiceUnavailable)
		return
	}
	if r.Header.Get(headerBatchCount) == "" {
		s.record(r.Header.Get(headerWebhookID), body)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	events := gjson.ParseBytes(body)
	if !events.IsArray() {
		http.Error(w, "a batch is a JSON array", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.batches++
	s.mu.Unlock()
	for _, e := range events.Array() {
		s.record(e.Get("webhook_id").String(), []byte(e.Get("payload").Raw))
	}
	w.WriteHeader(http.StatusNoContent)
}

// httpOnly answers a request to hold or release: 204 once do is done, or
// 400 when the sink consumes from a broker.
func (s *sink) httpOnly(do func()) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if s.broker != "" {
			http.Error(w, "hold and release are HTTP-only: this sink consumes from "+s.broker, http.StatusBadRequest)
			return
		}
		do()
		w.WriteHeader(http.StatusNoContent)
	}
}

// record counts one delivery of the event id (none: "") with body,
// received now.
func (s *sink) record(id string, body []byte) {
	at := s.now()
	sent := gjson.GetBytes(body, "sent_ns")
	s.mu.Lock()
	s.deliveries++
	if s.first.IsZero() {
		s.first = at
	}
	s.last = at
	if id != "" {
		s.ids[id] = struct{}{}
	}
	if sent.Type == gjson.Number {
		s.latencies = append(s.latencies, at.Sub(time.Unix(0, sent.Int())))
	} else {
		s.unstamped++
	}
	s.mu.Unlock()
}

// pass waits while the sink holds deliveries; false if r ended first.
func (s *sink) pass(r *http.Request) bool {
	s.mu.Lock()
	gate := s.gate
	if gate == nil {
		s.mu.Unlock()
		return true
	}
	s.held++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.held--
		s.mu.Unlock()
	}()
	select {
	case <-gate:
		return true
	case <-r.Context().Done():
		return false
	}
}

// hold makes deliveries wait until release; holding twice is holding.
func (s *sink) hold() {
	s.mu.Lock()
	if s.gate == nil {
		s.gate = make(chan struct{})
	}
	s.mu.Unlock()
}

// release lets the held deliveries and all later ones through.
func (s *sink) release() {
	s.mu.Lock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
	s.mu.Unlock()
}

// stats is the body of GET /stats.
type stats struct {
	Deliveries int     `json:"deliveries"`
	Batches    int     `json:"batches"`
	Distinct   int     `json:"distinct"`
	Unstamped  int     `json:"unstamped"`
	Held       int     `json:"held"`
	FirstAt    string  `json:"first_at"`
	LastAt     string  `json:"last_at"`
	Seconds    float64 `json:"seconds"`
	PerSec     float64 `json:"per_s"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
}

func (s *sink) stats() stats {
	s.mu.Lock()
	st := stats{Deliveries: s.deliveries, Batches: s.batches, Distinct: len(s.ids), Unstamped: s.unstamped, Held: s.held}
	first, last := s.first, s.last
	lat := slices.Clone(s.latencies)
	s.mu.Unlock()

	if !first.IsZero() {
		st.FirstAt = first.Format(time.RFC3339Nano)
		st.LastAt = last.Format(time.RFC3339Nano)
		st.Seconds = last.Sub(first).Seconds()
	}
	if st.Seconds > 0 {
		st.PerSec = float64(st.Deliveries) / st.Seconds
	}
	slices.Sort(lat)
	st.P50Ms = ms(percentile(lat, 50))
	st.P99Ms = ms(percentile(lat, 99))
	if len(lat) > 0 {
		st.MaxMs = ms(lat[len(lat)-1])
	}
	return st
}

func (s *sink) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deliveries, s.batches, s.unstamped = 0, 0, 0
	s.ids = make(map[string]struct{})
	s.latencies = nil
	s.first, s.last = time.Time{}, time.Time{}
}

// percentile is the nearest-rank pct-th percentile (1..100) of sorted, 0
// when it is empty.
func percentile(sorted []time.Duration, pct int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (len(sorted)*pct + 99) / 100
	return sorted[max(rank, 1)-1]
}

func ms(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}
