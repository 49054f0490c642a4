package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/lograte"
	"github.com/hookgate/hookgate/internal/metrics"
	"github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/internal/source"
)

// DefaultMaxBody is the request body limit when Options.MaxBody is zero.
const DefaultMaxBody = 1 << 20

// storeRetryAfter is what a sender is told to wait when the store failed.
const storeRetryAfter = 5 * time.Second

// DefaultMaxPendingBody is Options.MaxPendingBody when it is zero.
const DefaultMaxPendingBody = 64 << 20

// smallBody is the largest body that may use the share of the pending
// budget kept for small bodies, and smallReserveDiv sets that share: a
// quarter of the budget (less when the budget is close to max_body, so
// that a body of max_body still fits the rest). Webhooks are mostly a few
// KiB; slow senders of bodies near max_body then fill at most the other
// three quarters.
const (
	smallBody       = 64 << 10
	smallReserveDiv = 4
)

// busyRetryAfter is what a sender is told to wait when the bytes held
// before authentication are at their limit.
const busyRetryAfter = time.Second

// Options configure a Handler.
type Options struct {
	Sources   []*source.Source
	Committer *Committer
	// MaxBody limits request bodies (413 beyond); zero means DefaultMaxBody.
	MaxBody int64
	// MaxPendingBody bounds the body bytes all requests together hold
	// before they are authenticated (503 beyond); zero means
	// DefaultMaxPendingBody. It is raised to MaxBody if lower. A quarter
	// of it (less when that would leave no room for a body of MaxBody)
	// is kept for bodies of at most 64 KiB.
	MaxPendingBody int64
	// MinBodyRate is the slowest a body may arrive, in bytes a second,
	// once BodyGrace has passed: a body further behind is answered 408
	// and its connection closed. Zero: no minimum.
	MinBodyRate int64
	BodyGrace   time.Duration
	// Ready reports whether the store answers; /readyz calls it.
	Ready  func(context.Context) error
	Logger *slog.Logger
	// Metrics receives intake outcomes and dedupe latency; nil keeps them
	// on an unexported registry.
	Metrics *metrics.Metrics
}

// Handler serves POST /in/{source} and POST /in/{source}/{tenant}, plus
// /healthz and /readyz.
type Handler struct {
	sources   map[string]*source.Source
	committer *Committer
	maxBody   int64
	// minBodyRate and bodyGrace are Options.MinBodyRate and BodyGrace.
	minBodyRate int64
	bodyGrace   time.Duration
	// pending is the budget of body bytes held before authentication,
	// in two pools: small bodies (up to smallBody) take from either,
	// larger ones only from the general pool, so that slow senders of
	// large bodies cannot take the share small bodies always have.
	pending struct{ small, general *semaphore.Weighted }
	ready   func(context.Context) error
	// readyRun is the readiness check in flight, nil when none runs.
	readyMu  sync.Mutex
	readyRun *readyCheck
	log      *slog.Logger
	// errs writes the error lines a flood could repeat (every request
	// refused while the store is down) at a bounded rate.
	errs     *lograte.Logger
	metrics  *metrics.Metrics
	received map[string]*receivedCounters
	// busyPending and notReady count the 503s answered before
	// authentication (hookgate_busy_total).
	busyPending, notReady prometheus.Counter
	mux                   *http.ServeMux
}

// receivedCounters are one source's hookgate_events_received_total
// series, resolved once so that a request does not look up its labels.
type receivedCounters struct {
	accepted, duplicate, unauthenticated, invalid, storeError prometheus.Counter
	// verified counts the requests each secret of the source's list
	// authenticated, by its index.
	verified []prometheus.Counter
}

// NewHandler builds the intake handler.
func NewHandler(opts Options) *Handler {
	h := &Handler{
		sources:     make(map[string]*source.Source, len(opts.Sources)),
		committer:   opts.Committer,
		maxBody:     opts.MaxBody,
		minBodyRate: opts.MinBodyRate,
		bodyGrace:   opts.BodyGrace,
		ready:       opts.Ready,
		log:         opts.Logger,
		metrics:     opts.Metrics,
		mux:         http.NewServeMux(),
	}
	if h.metrics == nil {
		h.metrics = metrics.New()
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBody
	}
	maxPending := opts.MaxPendingBody
	if maxPending <= 0 {
		maxPending = DefaultMaxPendingBody
	}
	maxPending = max(maxPending, h.maxBody)
	reserve := min(maxPending/smallReserveDiv, maxPending-h.maxBody)
	h.pending.small = semaphore.NewWeighted(reserve)
	h.pending.general = semaphore.NewWeighted(maxPending - reserve)
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.errs = lograte.New(h.log)
	h.busyPending = h.metrics.Busy.WithLabelValues(metrics.BusyPendingBody)
	h.notReady = h.metrics.Busy.WithLabelValues(metrics.BusyNotReady)
	h.received = make(map[string]*receivedCounters, len(opts.Sources))
	for _, s := range opts.Sources {
		h.sources[s.Name] = s
		c := h.metrics.Received.MustCurryWith(prometheus.Labels{"source": s.Name})
		h.received[s.Name] = &receivedCounters{
			accepted:        c.WithLabelValues(metrics.ReceivedAccepted),
			duplicate:       c.WithLabelValues(metrics.ReceivedDuplicate),
			unauthenticated: c.WithLabelValues(metrics.ReceivedUnauthenticated),
			invalid:         c.WithLabelValues(metrics.ReceivedInvalid),
			storeError:      c.WithLabelValues(metrics.ReceivedStoreError),
		}
		for i := range s.Secrets {
			h.received[s.Name].verified = append(h.received[s.Name].verified,
				h.metrics.Verified.WithLabelValues(s.Name, strconv.Itoa(i)))
		}
	}
	h.mux.HandleFunc("POST /in/{source}", h.intake)
	h.mux.HandleFunc("POST /in/{source}/{tenant}", h.intake)
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	h.mux.HandleFunc("GET /readyz", h.readyz)
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// ErrDegraded, wrapped by an error of Options.Ready, means ready but
// degraded: /readyz answers 200 (keep sending) with "degraded: " and the
// error's text after the ErrDegraded prefix.
var ErrDegraded = errors.New("degraded")

// readyTimeout bounds the readiness check, so that /readyz answers within
// a second whatever the store does: a check that has not answered by then
// (a hung database) is not ready.
const readyTimeout = 800 * time.Millisecond

// readyCheck is one run of Options.Ready, which every /readyz that comes
// while it runs waits for: probes of a hung store do not pile up checks.
// A run past readyTimeout (a Ready that ignores its context) is joined no
// more, so that one hung run cannot keep a recovered store unready.
type readyCheck struct {
	started time.Time
	done    chan struct{}
	err     error
}

// checkReady runs Options.Ready within readyTimeout, or joins the run in
// flight, and returns its error, or one saying it did not answer in time.
func (h *Handler) checkReady(ctx context.Context) error {
	h.readyMu.Lock()
	rc := h.readyRun
	if rc == nil || time.Since(rc.started) >= readyTimeout {
		rc = &readyCheck{started: time.Now(), done: make(chan struct{})}
		h.readyRun = rc
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
			defer cancel()
			rc.err = h.ready(cctx)
			h.readyMu.Lock()
			if h.readyRun == rc {
				h.readyRun = nil
			}
			h.readyMu.Unlock()
			close(rc.done)
		}()
	}
	h.readyMu.Unlock()
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case <-rc.done:
		return rc.err
	case <-timer.C:
		return fmt.Errorf("the readiness check did not answer within %v", readyTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) {
	if h.ready != nil {
		if err := h.checkReady(r.Context()); errors.Is(err, ErrDegraded) {
			io.WriteString(w, err.Error()+"\n")
			return
		} else if err != nil {
			h.errs.Error("not ready", "err", err)
			h.notReady.Inc()
			http.Error(w, "store unavailable", http.StatusServiceUnavailable)
			return
		}
	}
	io.WriteString(w, "ok\n")
}

// requestError is an answer other than success, decided in one place.
type requestError struct {
	status     int
	msg        string
	retryAfter time.Duration
	err        error
	// uncounted: the request was turned away before its source could
	// judge it, so it counts under no outcome.
	uncounted bool
}

func (e *requestError) Error() string { return e.msg }
func (e *requestError) Unwrap() error { return e.err }

// EventResult is the per-event part of a response body.
type EventResult struct {
	EventID   string     `json:"event_id"`
	Outcome   string     `json:"outcome"`
	ID        int64      `json:"id,omitempty"`
	FirstSeen *time.Time `json:"first_seen,omitempty"`
}

// Response is the JSON body of an intake answer.
type Response struct {
	Status string        `json:"status"`
	Error  string        `json:"error,omitempty"`
	Events []EventResult `json:"events,omitempty"`
}

func (h *Handler) intake(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	name := r.PathValue("source")
	src := h.sources[name]
	status, resp, err := h.accept(w, r, src)
	var re *requestError
	if err != nil {
		if !errors.As(err, &re) {
			re = &requestError{status: http.StatusInternalServerError, msg: "internal error", err: err}
		}
		status = re.status
		resp = Response{Status: "error", Error: re.msg}
		if re.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((re.retryAfter+time.Second-1)/time.Second)))
		}
		if status >= 500 {
			// The sender sees only re.msg; the log carries the cause.
			h.errs.Error("intake failed", "source", name, "status", status, "err", re.msg, "cause", errString(re.err))
		}
	}
	writeResponse(w, src, status, resp)
	if src != nil && (re == nil || !re.uncounted) {
		h.received[name].count(status, resp)
	}
	if h.log.Enabled(r.Context(), slog.LevelDebug) {
		h.log.Debug("intake", "source", name, "status", status, "events", len(resp.Events),
			"err", errString(err), "duration", time.Since(start))
	}
}

// count records the outcome of one request.
func (c *receivedCounters) count(status int, resp Response) {
	switch status {
	case http.StatusAccepted, http.StatusOK:
		var accepted, duplicate float64
		for _, e := range resp.Events {
			if e.ID != 0 {
				accepted++
			} else {
				duplicate++
			}
		}
		if accepted > 0 {
			c.accepted.Add(accepted)
		}
		if duplicate > 0 {
			c.duplicate.Add(duplicate)
		}
	case http.StatusUnauthorized:
		c.unauthenticated.Inc()
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		c.invalid.Inc()
	case http.StatusServiceUnavailable:
		c.storeError.Inc()
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (h *Handler) accept(w http.ResponseWriter, r *http.Request, src *source.Source) (int, Response, error) {
	if src == nil {
		return 0, Response{}, &requestError{status: http.StatusNotFound, msg: "unknown source " + strconv.Quote(r.PathValue("source"))}
	}
	c, err := contentCoding(r.Header)
	if err != nil {
		w.Header().Set("Accept-Encoding", acceptedEncodings)
		return 0, Response{}, &requestError{status: http.StatusUnsupportedMediaType, msg: err.Error(), err: err}
	}
	// Until the request is authenticated its body is a stranger's; all of
	// them together hold at most the pending budget, each counted at the
	// most it may hold: its Content-Length, or max_body when it sends
	// none or when it is encoded (its decoded size is unknown until read).
	weight := h.maxBody
	if r.ContentLength >= 0 && c == codingIdentity {
		weight = min(weight, r.ContentLength)
	}
	pool := h.pending.general
	if weight <= smallBody && h.pending.small.TryAcquire(weight) {
		pool = h.pending.small
	} else if !pool.TryAcquire(weight) {
		h.busyPending.Inc()
		return 0, Response{}, &requestError{status: http.StatusServiceUnavailable, msg: "too many requests in progress, retry later",
			retryAfter: busyRetryAfter, uncounted: true}
	}
	release := sync.OnceFunc(func() { pool.Release(weight) })
	defer release()
	// The body is verified, stored and delivered decoded: the senders that
	// compress sign the payload, not its compressed form, and a
	// destination gets no Content-Encoding with it.
	paced := newRateReader(w, r.Body, h.minBodyRate, h.bodyGrace)
	body, err := readBody(http.MaxBytesReader(w, io.NopCloser(paced), h.maxBody), r.ContentLength, c, h.maxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		var decodedTooBig *decodedTooLarge
		var slow *slowBody
		switch {
		case errors.As(err, &slow):
			// The rest of the body would not arrive in time either.
			w.Header().Set("Connection", "close")
			return 0, Response{}, &requestError{status: http.StatusRequestTimeout, msg: err.Error(), err: err}
		case errors.As(err, &tooBig):
			return 0, Response{}, &requestError{status: http.StatusRequestEntityTooLarge,
				msg: fmt.Sprintf("body larger than %d bytes", tooBig.Limit)}
		case errors.As(err, &decodedTooBig):
			return 0, Response{}, &requestError{status: http.StatusRequestEntityTooLarge, msg: err.Error()}
		}
		var de *decodeError
		if errors.As(err, &de) {
			return 0, Response{}, &requestError{status: http.StatusBadRequest, msg: err.Error(), err: err}
		}
		return 0, Response{}, &requestError{status: http.StatusBadRequest, msg: "reading body: " + err.Error(), err: err}
	}
	secret, err := src.Authenticate(r, body)
	release()
	if err != nil {
		return 0, Response{}, &requestError{status: http.StatusUnauthorized, msg: err.Error(), err: err}
	}
	h.received[src.Name].verified[secret].Inc()
	tenant := r.PathValue("tenant")
	events, err := src.Events(r, body, tenant)
	if err != nil {
		return 0, Response{}, &requestError{status: http.StatusBadRequest, msg: err.Error(), err: err}
	}
	// The digest is taken after the events are keyed, so that a request
	// the source refuses (400) keeps none.
	digest, _ := src.Digest(r, body)
	items := make([]inbox.Item, len(events))
	for i := range events {
		items[i] = inbox.Item{Event: toInbox(src, &events[i]), Window: src.Window, Digest: digest}
	}
	submitted := time.Now()
	outs, errs, err := h.committer.Submit(r.Context(), items)
	h.metrics.DedupeSeconds.Observe(time.Since(submitted).Seconds())
	if err != nil {
		return 0, Response{}, &requestError{status: http.StatusServiceUnavailable, msg: "shutting down",
			retryAfter: storeRetryAfter, err: err}
	}
	resp := Response{Events: make([]EventResult, len(events))}
	anyNew := false
	var inFlightUntil time.Time
	for i := range events {
		if errs[i] != nil {
			return 0, Response{}, &requestError{status: http.StatusServiceUnavailable, msg: "store unavailable, retry later",
				retryAfter: storeRetryAfter, err: errs[i]}
		}
		o := outs[i]
		res := EventResult{EventID: events[i].EventID, Outcome: outcomeName(o.Status)}
		switch o.Status {
		case dedupe.New:
			anyNew = true
			res.ID = o.ID
		case dedupe.Duplicate:
			fs := o.FirstSeen.UTC()
			res.FirstSeen = &fs
		case dedupe.InFlight:
			if o.Expires.After(inFlightUntil) {
				inFlightUntil = o.Expires
			}
		}
		resp.Events[i] = res
	}
	switch {
	case !inFlightUntil.IsZero():
		// Another node holds a copy that is not yet durable: saying 2xx
		// could hide its failure, so the sender retries after its lease.
		return 0, Response{}, &requestError{status: http.StatusConflict, msg: "event in flight, retry later",
			retryAfter: max(time.Until(inFlightUntil), time.Second)}
	case anyNew:
		resp.Status = "accepted"
		return http.StatusAccepted, resp, nil
	default:
		resp.Status = "duplicate"
		return http.StatusOK, resp, nil
	}
}

func outcomeName(s dedupe.Status) string {
	switch s {
	case dedupe.New:
		return "accepted"
	case dedupe.Duplicate:
		return "duplicate"
	}
	return s.String()
}

func toInbox(src *source.Source, e *source.Event) inbox.Event {
	return inbox.Event{
		Hash:          e.Hash,
		Scope:         e.Key.Scope(),
		Source:        src.Name,
		Provider:      src.Provider,
		Tenant:        e.Tenant,
		EventID:       e.EventID,
		Type:          e.Key.Action,
		EntityType:    e.Entity.Type,
		EntityID:      e.Entity.ID,
		EntityVersion: e.Entity.Version,
		EntityOrder:   e.Entity.Order,
		EntityState:   e.Entity.State,
		Payload:       e.Payload,
		Headers:       e.Headers,
	}
}

func writeResponse(w http.ResponseWriter, src *source.Source, status int, resp Response) {
	if src != nil {
		if p, ok := provider.Lookup(src.Provider); ok && p.Answer != nil {
			p.Answer(w, status, resp.Error)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(resp)
}
