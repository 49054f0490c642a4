package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
)

// ErrNoToken is returned by [New] without a token: the console is never
// served without sign-in.
var ErrNoToken = errors.New("console: no admin token set; the console is never enabled without one")

// ErrNoStore is returned by [New] without a store.
var ErrNoStore = errors.New("console: no store")

// Defaults of the zero [Options] fields.
const (
	// DefaultSessionTTL is how long a sign-in lasts.
	DefaultSessionTTL = 12 * time.Hour
	// DefaultMaxTail is how many live tails may be open at once.
	DefaultMaxTail = 16
	// DefaultTailEvery is how often a live tail looks for new events.
	DefaultTailEvery = time.Second
	// PageSize is how many events a list page shows.
	PageSize = 50
	// AttemptsShown is how many of a destination's newest attempts its
	// page shows.
	AttemptsShown = 50
	// SendTimeout bounds a test event's POST to the intake.
	SendTimeout = 10 * time.Second
)

// MaxForm is the largest form body the console reads (413 above it).
const MaxForm = 1 << 20

// Options configure the console.
type Options struct {
	// Store is the inbox the console reads and replays.
	Store inbox.Store
	// Token is the admin token that signs in; required.
	Token string
	// Sources are the configured sources, for the sources page. Their
	// secrets are never shown.
	Sources []config.Source
	// Intake returns the address (host:port) of the gateway's public
	// listener, where a source's Send test event posts; nil, or "" while
	// the listener is not open, leaves the button out.
	Intake func() string
	// Logger receives the errors answered with 500; nil discards them.
	Logger *slog.Logger
	// Now is the clock of sessions, charts and test events' signatures;
	// nil means time.Now.
	Now func() time.Time
	// SessionTTL, MaxTail and TailEvery replace their defaults when set.
	SessionTTL time.Duration
	MaxTail    int
	TailEvery  time.Duration
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// console holds the handlers' shared state.
type console struct {
	store     inbox.Store
	sources   []config.Source
	intake    func() string
	log       *slog.Logger
	now       func() time.Time
	sessions  *sessions
	token     tokenCheck
	pages     map[string]*template.Template
	tail      chan struct{}
	tailEvery time.Duration
	// hour and day read the charts' activity, by minute and by hour;
	// nil when the store counts none.
	hour, day *activityCache
	// client posts test events to the intake; it never follows a
	// redirect, which would turn the POST into a GET.
	client *http.Client
}

// New returns the console, serving the paths under /ui/.
func New(opts Options) (http.Handler, error) {
	if opts.Token == "" {
		return nil, ErrNoToken
	}
	if opts.Store == nil {
		return nil, ErrNoStore
	}
	c := &console{store: opts.Store, sources: opts.Sources, intake: opts.Intake, log: opts.Logger, now: opts.Now,
		token: newTokenCheck(opts.Token), tailEvery: opts.TailEvery,
		client: &http.Client{Timeout: SendTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.tailEvery <= 0 {
		c.tailEvery = DefaultTailEvery
	}
	ttl := opts.SessionTTL
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	c.sessions = newSessions(ttl, c.now, c.log)
	maxTail := opts.MaxTail
	if maxTail <= 0 {
		maxTail = DefaultMaxTail
	}
	c.tail = make(chan struct{}, maxTail)
	var err error
	if c.pages, err = parsePages(); err != nil {
		return nil, err
	}
	if r, ok := opts.Store.(inbox.ActivityReader); ok {
		// Two minutes more than the hour shown: the day's hours not
		// closed yet are summed from them.
		c.hour = newActivityCache(r, time.Minute, 62)
		c.day = newActivityCache(r, time.Hour, 24)
	}

	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	mux.Handle("GET /ui/login", c.route(c.loginPage))
	mux.Handle("POST /ui/login", c.route(c.login))
	mux.Handle("POST /ui/logout", c.signedIn(c.logout))
	mux.Handle("GET /ui/{$}", c.signedIn(c.overview))
	mux.Handle("GET /ui/events", c.signedIn(c.events))
	mux.Handle("GET /ui/events/{id}", c.signedIn(c.event))
	mux.Handle("GET /ui/dead", c.signedIn(c.dead))
	mux.Handle("POST /ui/replay", c.signedIn(c.replay))
	mux.Handle("GET /ui/sources", c.signedIn(c.sourcesPage))
	mux.Handle("POST /ui/sources/{name}/test", c.signedIn(c.sendTest))
	mux.Handle("GET /ui/destinations/{name}", c.signedIn(c.destinationPage))
	mux.Handle("POST /ui/destinations/{name}/hold", c.signedIn(c.hold))
	mux.Handle("POST /ui/destinations/{name}/skip", c.signedIn(c.skip))
	mux.Handle("GET /ui/incidents", c.signedIn(c.incidentsPage))
	mux.Handle("GET /ui/reconcile", c.signedIn(c.reconcilePage))
	mux.Handle("GET /ui/tail", c.signedIn(c.tailPage))
	mux.Handle("GET /ui/tail/stream", c.signedIn(c.tailStream))
	mux.Handle("/ui/", c.signedIn(func(_ http.ResponseWriter, r *http.Request, _ *session) error {
		return &httpError{code: http.StatusNotFound, msg: "no such page: " + r.URL.Path}
	}))
	return securityHeaders(mux), nil
}

// securityHeaders keeps the console's pages out of frames and other
// origins' scripts, and its answers out of shared caches.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
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

// route adapts a handler that returns an error, and maps the error to its
// status and an error page in one place.
func (c *console) route(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		code := http.StatusInternalServerError
		var he *httpError
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &he):
			code = he.code
		case errors.Is(err, inbox.ErrNotFound):
			code = http.StatusNotFound
		case errors.As(err, &tooBig):
			code = http.StatusRequestEntityTooLarge
		default:
			if r.Context().Err() == nil {
				c.log.Error("console", "method", r.Method, "path", r.URL.Path, "err", err)
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(code)
		var buf bytes.Buffer
		if c.pages["error"].ExecuteTemplate(&buf, "layout", page{Title: http.StatusText(code), Data: err.Error()}) == nil {
			w.Write(buf.Bytes())
		}
	})
}

// page is what every template gets: the page's own data and what the
// layout needs.
type page struct {
	Title string
	// Nav is the navigation entry to mark as current; "" on the pages
	// shown without a session (the sign-in form, errors), which show no
	// navigation and nothing of the gateway's state.
	Nav string
	// CSRF is the session's token for the forms, or the sign-in form's.
	CSRF string
	// Flash is what the POST before this page did; nil after a GET.
	Flash *flash
	Data  any
	// Open counts the open incidents, for the banner every signed-in
	// page shows while any is open.
	Open int
}

// incidentsTimeout bounds the read of the open incidents for a page's
// banner.
const incidentsTimeout = 2 * time.Second

// render writes the named page, executed into a buffer first so that a
// failing template answers 500 instead of half a page.
func (c *console) render(w http.ResponseWriter, name string, p page) error {
	if inc, ok := c.store.(inbox.Incidents); ok && p.Nav != "" {
		// The page shows without the banner when they cannot be read.
		ctx, cancel := context.WithTimeout(context.Background(), incidentsTimeout)
		if open, err := inc.ListIncidents(ctx, false, IncidentsShown); err == nil {
			p.Open = len(open)
		}
		cancel()
	}
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, err := w.Write(buf.Bytes())
	return err
}
