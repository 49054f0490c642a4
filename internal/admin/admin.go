package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hookgate/hookgate/internal/guard"
	"github.com/hookgate/hookgate/internal/inbox"
)

// ErrNoToken is returned by [New] when no token is set: the admin API is
// never served without one.
var ErrNoToken = errors.New("admin: no token set; the admin API is never enabled without one")

// ErrNoStore is returned by [New] without a store.
var ErrNoStore = errors.New("admin: no store")

// MaxBody is the largest request body the API reads (413 above it).
const MaxBody = 1 << 20

// MaxLimit caps the page size of the lists.
const MaxLimit = 1000

// Options configure the admin API.
type Options struct {
	// Store is the inbox the API reads and replays.
	Store inbox.Store
	// Token is the bearer token every request must carry; required.
	Token string
	// Logger receives the errors answered with 500 and the wrong tokens;
	// nil discards them.
	Logger *slog.Logger
	// Now is the clock of the wrong-token limiter; nil means time.Now.
	Now func() time.Time
}

// api holds the handlers' shared state.
type api struct {
	store inbox.Store
	log   *slog.Logger
}

// New returns the admin API, serving the paths under /api/.
func New(opts Options) (http.Handler, error) {
	if opts.Token == "" {
		return nil, ErrNoToken
	}
	if opts.Store == nil {
		return nil, ErrNoStore
	}
	a := &api{store: opts.Store, log: opts.Logger}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/events", a.route(http.MethodGet, a.listEvents))
	mux.Handle("/api/events/{id}", a.route(http.MethodGet, a.showEvent))
	mux.Handle("/api/dead", a.route(http.MethodGet, a.listDead))
	mux.Handle("/api/replay", a.route(http.MethodPost, a.replay))
	mux.Handle("/api/stats", a.route(http.MethodGet, a.stats))
	mux.Handle("/api/", a.route("", func(_ http.ResponseWriter, r *http.Request) error {
		return &httpError{code: http.StatusNotFound, msg: "no such route: " + r.URL.Path}
	}))
	lim := guard.New(guard.Options{What: "admin api", Logger: a.log, Now: opts.Now})
	checked := RequireToken(opts.Token, lim, mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every answer is JSON; a browser must not read one as anything
		// else (an event's payload is the sender's text).
		w.Header().Set("X-Content-Type-Options", "nosniff")
		checked.ServeHTTP(w, r)
	}), nil
}

// RequireToken answers 401 to every request without "Authorization:
// Bearer token" and passes the others to next. The tokens are compared as
// SHA-256 digests in constant time, so neither the content nor the length
// of the token leaks through timing. Wrong tokens are counted by lim: an
// address it blocks is answered 429 with Retry-After, whatever token it
// sends, so that guessing cannot go on.
func RequireToken(token string, lim *guard.Limiter, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := lim.Blocked(r); d > 0 {
			guard.Refuse(w, d)
			writeError(w, http.StatusTooManyRequests, "too many wrong tokens from this address; try again after Retry-After seconds")
			return
		}
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hookgate"`)
			writeError(w, http.StatusUnauthorized, "bearer token required")
			return
		}
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			lim.Failed(r)
			w.Header().Set("WWW-Authenticate", `Bearer realm="hookgate", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, "invalid token")
			return
		}
		lim.Succeeded(r)
		next.ServeHTTP(w, r)
	})
}

// httpError is an error with the status it is answered with.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

// badRequest is a 400 naming what is wrong.
func badRequest(format string, args ...any) error {
	return &httpError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// route adapts a handler that returns an error, answering only method
// (any when ""), and maps the error to its status in one place.
func (a *api) route(method string, h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if method != "" && r.Method != method {
			w.Header().Set("Allow", method)
			writeError(w, http.StatusMethodNotAllowed, r.Method+" not allowed; use "+method)
			return
		}
		err := h(w, r)
		if err == nil {
			return
		}
		var he *httpError
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &he):
			writeError(w, he.code, he.msg)
		case errors.Is(err, inbox.ErrNotFound):
			writeError(w, http.StatusNotFound, err.Error())
		case errors.As(err, &tooBig):
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", tooBig.Limit))
		default:
			if r.Context().Err() == nil {
				a.log.Error("admin api", "method", r.Method, "path", r.URL.Path, "err", err)
			}
			writeError(w, http.StatusInternalServerError, err.Error())
		}
	})
}

// writeJSON answers v with code. The answer's types always encode, so the
// only error left is a client gone away, which nothing can be told about.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// writeError answers {"error": msg} with code.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
