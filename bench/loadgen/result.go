package main

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// samples is what one worker measured.
type samples struct {
	all, accepted, duplicate []time.Duration
	errors                   int
	firstErr                 error
	other                    map[int]int
	redelivered202, new200   int
}

func (s *samples) add(redelivery bool, status int, latency time.Duration, err error) {
	s.all = append(s.all, latency)
	switch {
	case err != nil:
		s.errors++
		if s.firstErr == nil {
			s.firstErr = err
		}
	case status == http.StatusAccepted:
		s.accepted = append(s.accepted, latency)
		if redelivery {
			s.redelivered202++
		}
	case status == http.StatusOK:
		s.duplicate = append(s.duplicate, latency)
		if !redelivery {
			s.new200++
		}
	default:
		if s.other == nil {
			s.other = make(map[int]int)
		}
		s.other[status]++
	}
}

// result is the report of one run.
type result struct {
	// Label names the run.
	Label string `json:"label"`
	// Seconds is the length of the measured window.
	Seconds float64 `json:"seconds"`
	// Requests counts the requests that completed in the window.
	Requests int `json:"requests"`
	// ReqPerSec is Requests per second.
	ReqPerSec float64 `json:"req_per_s"`
	// Accepted counts 202 answers, AcceptedPerSec per second.
	Accepted       int     `json:"accepted"`
	AcceptedPerSec float64 `json:"accepted_per_s"`
	// Duplicates counts 200 answers, DuplicatesPerSec per second.
	Duplicates       int     `json:"duplicates"`
	DuplicatesPerSec float64 `json:"duplicates_per_s"`
	// Errors counts requests that got no response.
	Errors int `json:"errors"`
	// Other counts responses other than 202 and 200; OtherStatuses by status.
	Other         int            `json:"other"`
	OtherStatuses map[string]int `json:"other_statuses,omitempty"`
	// Redelivered202 counts redeliveries answered 202, New200 first sends
	// answered 200.
	Redelivered202 int `json:"redelivered_202"`
	New200         int `json:"new_200"`
	// Latencies in milliseconds: over all requests, and p99 of the 202s
	// and of the 200s (0 when there were none).
	P50Ms          float64 `json:"p50_ms"`
	P99Ms          float64 `json:"p99_ms"`
	MaxMs          float64 `json:"max_ms"`
	P99AcceptedMs  float64 `json:"p99_202_ms"`
	P99DuplicateMs float64 `json:"p99_200_ms"`
	// IDs is the number of new ids sent, warmup included: the run used
	// "<prefix>-0" .. "<prefix>-(IDs-1)".
	IDs uint64 `json:"ids"`

	firstErr error
}

func summarize(label string, elapsed time.Duration, ids uint64, workers []*worker) *result {
	var all, accepted, duplicate []time.Duration
	r := &result{Label: label, Seconds: elapsed.Seconds(), IDs: ids}
	for _, w := range workers {
		s := &w.samples
		all = append(all, s.all...)
		accepted = append(accepted, s.accepted...)
		duplicate = append(duplicate, s.duplicate...)
		r.Errors += s.errors
		if r.firstErr == nil {
			r.firstErr = s.firstErr
		}
		r.Redelivered202 += s.redelivered202
		r.New200 += s.new200
		for status, n := range s.other {
			if r.OtherStatuses == nil {
				r.OtherStatuses = make(map[string]int)
			}
			r.OtherStatuses[strconv.Itoa(status)] += n
			r.Other += n
		}
	}
	slices.Sort(all)
	slices.Sort(accepted)
	slices.Sort(duplicate)
	r.Requests, r.Accepted, r.Duplicates = len(all), len(accepted), len(duplicate)
	r.ReqPerSec = float64(r.Requests) / r.Seconds
	r.AcceptedPerSec = float64(r.Accepted) / r.Seconds
	r.DuplicatesPerSec = float64(r.Duplicates) / r.Seconds
	r.P50Ms = ms(percentile(all, 50))
	r.P99Ms = ms(percentile(all, 99))
	r.P99AcceptedMs = ms(percentile(accepted, 99))
	r.P99DuplicateMs = ms(percentile(duplicate, 99))
	if len(all) > 0 {
		r.MaxMs = ms(all[len(all)-1])
	}
	return r
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

// line is the one-line form of the report; a latency of no requests is "-".
func (r *result) line() string {
	return fmt.Sprintf("%-16s req/s %8.0f  202/s %8.0f  200/s %8.0f  errors %d  other %d  p50 %s  p99 %s  max %s  p99(202) %s  p99(200) %s  redelivered_202 %d  new_200 %d",
		r.Label, r.ReqPerSec, r.AcceptedPerSec, r.DuplicatesPerSec, r.Errors, r.Other,
		msText(r.P50Ms, r.Requests), msText(r.P99Ms, r.Requests), msText(r.MaxMs, r.Requests),
		msText(r.P99AcceptedMs, r.Accepted), msText(r.P99DuplicateMs, r.Duplicates),
		r.Redelivered202, r.New200)
}

func msText(v float64, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fms", v)
}
