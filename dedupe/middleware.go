package dedupe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"time"
)

const (
	// LeaseDefault is the lease [Middleware] takes when
	// [MiddlewareOptions.Lease] is zero.
	LeaseDefault = 30 * time.Second
	// WindowDefault is how long [Middleware] keeps a committed key when
	// [MiddlewareOptions.Window] is zero: a week, longer than every
	// provider's retry period.
	WindowDefault = 168 * time.Hour
	// unavailableRetryAfter is the Retry-After, in seconds, of the default
	// answer when the store fails.
	unavailableRetryAfter = "5"
)

// ErrNoKey wraps the error of a [Middleware] key function: the request does
// not name an event.
var ErrNoKey = errors.New("dedupe: no key for request")

// MiddlewareOptions configures [Middleware]. The zero value uses the
// defaults.
type MiddlewareOptions struct {
	// Lease is how long a request holds its key while the handler runs;
	// zero means LeaseDefault. It should outlast the slowest handler run: a
	// copy that arrives after the lease ended runs the handler again, and
	// the first run's commit then fails.
	Lease time.Duration
	// Window is how long a committed key answers Duplicate; zero means
	// WindowDefault. It should outlast the sender's retries.
	Window time.Duration
	// OnError answers a request the middleware cannot pass to the handler:
	// the key function failed (err wraps ErrNoKey), or the store did (err
	// wraps ErrUnavailable, or ErrLeaseLost when the handler outlived its
	// lease). Nil means 400 for ErrNoKey and 503 with Retry-After otherwise.
	OnError func(w http.ResponseWriter, r *http.Request, err error)
	// Now returns the current time, from which Retry-After is computed; nil
	// means time.Now. Pass the store's clock if it has its own.
	Now func() time.Time
}

// reply is the JSON body of every answer the middleware writes itself.
type reply struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Middleware applies the claim protocol around a synchronous handler that
// makes each event durable before it answers. key names the event a
// request carries; it may read the body, which the handler then reads again
// from the start.
//
// For a new key the handler runs while the request holds a lease. A 2xx
// status is committed before it is passed on, so a sender never sees
// success for a key that is not committed; if the commit fails, the
// response becomes the store error answer and the handler's writes fail.
// Any other status, or a panic before the status was written, releases the
// key so the sender's retry runs the handler again; a panic continues after
// the release. A handler that writes nothing answers 200 and commits.
//
// A committed key is answered 200 with the header Idempotent-Replayed: true
// without calling the handler; a key another request holds is answered 409
// with Retry-After set to the seconds left on its lease. Failures go to
// [MiddlewareOptions.OnError].
//
// Authenticate requests before this middleware: an unauthenticated request
// must not be able to plant a key that would swallow the real event.
func Middleware(store Store, key func(*http.Request) (Key, error), opts MiddlewareOptions) func(http.Handler) http.Handler {
	m := &middleware{store: store, key: key, lease: opts.Lease, window: opts.Window, onError: opts.OnError, now: opts.Now}
	if m.lease <= 0 {
		m.lease = LeaseDefault
	}
	if m.window <= 0 {
		m.window = WindowDefault
	}
	if m.onError == nil {
		m.onError = defaultOnError
	}
	if m.now == nil {
		m.now = time.Now
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m.serve(w, r, next)
		})
	}
}

type middleware struct {
	store         Store
	key           func(*http.Request) (Key, error)
	lease, window time.Duration
	onError       func(http.ResponseWriter, *http.Request, error)
	now           func() time.Time
}

func (m *middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	k, err := m.keyOf(r)
	if err != nil {
		m.onError(w, r, fmt.Errorf("%w: %w", ErrNoKey, err))
		return
	}
	res, err := ClaimOne(r.Context(), m.store, m.lease, k.Hash())
	if err != nil {
		m.onError(w, r, storeError(err))
		return
	}
	switch res.Status {
	case New:
		m.run(w, r, next, res.Lease)
	case Duplicate:
		w.Header().Set("Idempotent-Replayed", "true")
		writeReply(w, http.StatusOK, reply{Status: res.Status.String()})
	case InFlight:
		w.Header().Set("Retry-After", strconv.FormatInt(retryAfter(res.Expires.Sub(m.now())), 10))
		writeReply(w, http.StatusConflict, reply{Status: res.Status.String()})
	default:
		m.onError(w, r, storeError(fmt.Errorf("claim answered %s", res.Status)))
	}
}

// keyOf calls the key function and leaves r.Body reading from the start
// again: the bytes the key function consumed, then the rest.
func (m *middleware) keyOf(r *http.Request) (Key, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return m.key(r)
	}
	body := r.Body
	rec := &recordingBody{body: body}
	r.Body = rec
	k, err := m.key(r)
	r.Body = body
	if rec.read.Len() > 0 {
		r.Body = replayBody{Reader: io.MultiReader(&rec.read, body), Closer: body}
	}
	return k, err
}

// recordingBody keeps what the key function reads. Closing it does nothing:
// the handler still has to read the body.
type recordingBody struct {
	body io.Reader
	read bytes.Buffer
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.read.Write(p[:n])
	return n, err
}

func (b *recordingBody) Close() error { return nil }

type replayBody struct {
	io.Reader
	io.Closer
}

// run calls the handler for a new key and commits or releases its lease.
func (m *middleware) run(w http.ResponseWriter, r *http.Request, next http.Handler, lease Lease) {
	sw := &statusWriter{ResponseWriter: w, m: m, r: r, lease: lease, header: w.Header().Clone()}
	returned := false
	defer func() {
		if returned && sw.state == pending {
			sw.WriteHeader(http.StatusOK)
		}
		if sw.state != committed {
			// A release that fails leaves the lease to expire by itself.
			_ = m.store.Release(context.WithoutCancel(r.Context()), lease)
		}
	}()
	next.ServeHTTP(sw, r)
	returned = true
}

// writerState is how far a response under a lease has got.
type writerState uint8

const (
	pending   writerState = iota // no final status yet
	committed                    // a 2xx status went out after its key was committed
	passed                       // another status went out; the key will be released
	failed                       // the commit failed and the store error was answered
)

// statusWriter commits the lease when the handler's 2xx status goes out and
// records any other status. Flush and Unwrap keep [http.Flusher] and
// [http.ResponseController] working through it.
type statusWriter struct {
	http.ResponseWriter
	m     *middleware
	r     *http.Request
	lease Lease
	// header is the response header as it was before the handler ran,
	// restored when a failed commit replaces the handler's answer.
	header http.Header
	state  writerState
	err    error
}

func (w *statusWriter) WriteHeader(code int) {
	switch {
	case w.state == failed:
		return
	case w.state != pending, code >= 100 && code < 200 && code != http.StatusSwitchingProtocols:
		w.ResponseWriter.WriteHeader(code)
		return
	case code < 200 || code > 299:
		w.state = passed
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if err := w.m.store.Commit(context.WithoutCancel(w.r.Context()), w.m.window, w.lease); err != nil {
		w.state = failed
		w.err = storeError(err)
		h := w.ResponseWriter.Header()
		clear(h)
		maps.Copy(h, w.header)
		w.m.onError(w.ResponseWriter, w.r, w.err)
		return
	}
	w.state = committed
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.state == pending {
		w.WriteHeader(http.StatusOK)
	}
	if w.state == failed {
		return 0, w.err
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if w.state == pending {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.state != failed {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter {
	return w.ResponseWriter
}

// storeError marks err as the store's failure unless it already says which.
func storeError(err error) error {
	if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrLeaseLost) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// retryAfter rounds the time left on a lease up to whole seconds, at least 1.
func retryAfter(left time.Duration) int64 {
	return max(1, int64((left+time.Second-1)/time.Second))
}

func defaultOnError(w http.ResponseWriter, _ *http.Request, err error) {
	if errors.Is(err, ErrNoKey) {
		writeReply(w, http.StatusBadRequest, reply{Status: "bad-request", Error: err.Error()})
		return
	}
	w.Header().Set("Retry-After", unavailableRetryAfter)
	writeReply(w, http.StatusServiceUnavailable, reply{Status: "unavailable"})
}

func writeReply(w http.ResponseWriter, code int, body reply) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(body)
}
