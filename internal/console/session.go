package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hookgate/hookgate/internal/guard"
)

// MaxSessions caps the open sign-ins: beyond it the oldest ends, so that
// signing in over and over cannot fill the memory.
const MaxSessions = 1000

// Cookie names. The session cookie is scoped to /ui/; the sign-in cookie
// to the sign-in form, whose POST it guards.
const (
	sessionCookie = "hookgate_session"
	loginCookie   = "hookgate_login"
)

// tokenCheck compares a token with the admin token as SHA-256 digests in
// constant time, so neither the content nor the length of the token leaks
// through timing (as the admin API does).
type tokenCheck [sha256.Size]byte

func newTokenCheck(token string) tokenCheck { return sha256.Sum256([]byte(token)) }

func (t tokenCheck) matches(got string) bool {
	sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
	return subtle.ConstantTimeCompare(sum[:], t[:]) == 1
}

// session is one sign-in.
type session struct {
	// csrf is the token every POST of the session must carry.
	csrf    string
	expires time.Time

	mu sync.Mutex
	// flash is what a POST did, for the page it redirects to.
	flash *flash
}

// flash is the outcome of a POST that redirected, shown once on the next
// page: a line, and the details that go with it (the intake's answer).
type flash struct {
	Text   string
	Detail string
	Failed bool
	// Events are the inbox ids the intake stored, to link to.
	Events []int64
}

// setFlash keeps f for the session's next page.
func (s *session) setFlash(f *flash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flash = f
}

// takeFlash returns the kept flash, once; nil when there is none.
func (s *session) takeFlash() *flash {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.flash
	s.flash = nil
	return f
}

// sessions are the open sign-ins, by the digest of their cookie's id: a
// dump of the map does not give the cookies. guard counts the wrong
// tokens of the sign-in form.
type sessions struct {
	mu    sync.Mutex
	byID  map[[sha256.Size]byte]*session
	ttl   time.Duration
	now   func() time.Time
	guard *guard.Limiter
}

func newSessions(ttl time.Duration, now func() time.Time, log *slog.Logger) *sessions {
	return &sessions{byID: map[[sha256.Size]byte]*session{}, ttl: ttl, now: now,
		guard: guard.New(guard.Options{What: "console sign-in", Logger: log, Now: now})}
}

// randomToken returns 32 random bytes, base64url: unguessable ids and
// CSRF tokens.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails: crypto/rand panics rather than return short
	return base64.RawURLEncoding.EncodeToString(b)
}

// open starts a session and returns its id; expired sessions are dropped,
// and the oldest (the first to expire) when MaxSessions are open.
func (s *sessions) open() (string, *session) {
	id := randomToken()
	sess := &session{csrf: randomToken(), expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var oldest [sha256.Size]byte
	var oldestExpires time.Time
	for k, v := range s.byID {
		switch {
		case !now.Before(v.expires):
			delete(s.byID, k)
		case oldestExpires.IsZero() || v.expires.Before(oldestExpires):
			oldest, oldestExpires = k, v.expires
		}
	}
	if len(s.byID) >= MaxSessions {
		delete(s.byID, oldest)
	}
	s.byID[sha256.Sum256([]byte(id))] = sess
	return id, sess
}

// get returns the live session of id, or nil.
func (s *sessions) get(id string) *session {
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.byID[key]
	if sess == nil {
		return nil
	}
	if !s.now().Before(sess.expires) {
		delete(s.byID, key)
		return nil
	}
	return sess
}

// close ends the session of id.
func (s *sessions) close(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, sha256.Sum256([]byte(id)))
}

// cookie returns a console cookie: HttpOnly, SameSite=Strict, Secure when
// the browser came over TLS: to this server, or to a proxy in front of it
// that says so in X-Forwarded-Proto (a sender who forges the header only
// makes its own cookie stricter).
func cookie(r *http.Request, name, value, path string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r)}
}

// overTLS reports whether the browser came over TLS.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// sameToken compares two tokens in constant time; an empty one never
// matches.
func sameToken(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// signedIn adapts a handler that needs a session: without one a GET is
// sent to the sign-in form and anything else is refused with 401; a POST
// whose csrf field is not the session's token is refused with 403.
func (c *console) signedIn(h func(http.ResponseWriter, *http.Request, *session) error) http.Handler {
	return c.route(func(w http.ResponseWriter, r *http.Request) error {
		var sess *session
		if ck, err := r.Cookie(sessionCookie); err == nil {
			sess = c.sessions.get(ck.Value)
		}
		if sess == nil {
			if r.Method == http.MethodGet && r.Header.Get("Accept") != "text/event-stream" {
				http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return nil
			}
			return &httpError{code: http.StatusUnauthorized, msg: "sign in first"}
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, MaxForm)
			if err := r.ParseForm(); err != nil {
				return badRequest("form: %v", err)
			}
			if !sameToken(r.PostForm.Get("csrf"), sess.csrf) {
				return &httpError{code: http.StatusForbidden, msg: "the form's CSRF token is missing or stale; reload the page and try again"}
			}
		}
		return h(w, r, sess)
	})
}

// loginData is what the sign-in form shows.
type loginData struct {
	Next  string
	Error string
}

// loginPage shows the sign-in form with a fresh token in a cookie and in
// the form: the POST must carry both, so another site cannot sign a
// browser in.
func (c *console) loginPage(w http.ResponseWriter, r *http.Request) error {
	return c.showLogin(w, r, http.StatusOK, "")
}

func (c *console) showLogin(w http.ResponseWriter, r *http.Request, code int, msg string) error {
	tok := randomToken()
	http.SetCookie(w, cookie(r, loginCookie, tok, "/ui/login", 3600))
	w.WriteHeader(code)
	return c.render(w, "login", page{Title: "Sign in", CSRF: tok, Data: loginData{Next: safeNext(r.FormValue("next")), Error: msg}})
}

// login checks the admin token and opens a session.
func (c *console) login(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, MaxForm)
	if err := r.ParseForm(); err != nil {
		return badRequest("form: %v", err)
	}
	ck, err := r.Cookie(loginCookie)
	if err != nil || !sameToken(ck.Value, r.PostForm.Get("csrf")) {
		return &httpError{code: http.StatusForbidden, msg: "the sign-in form is stale; reload it and try again"}
	}
	if d := c.sessions.guard.Blocked(r); d > 0 {
		// Refused even with the right token, or the guessing would go on.
		guard.Refuse(w, d)
		return c.showLogin(w, r, http.StatusTooManyRequests, "Too many wrong tokens from this address; try again in "+d.Round(time.Second).String()+".")
	}
	if !c.token.matches(r.PostForm.Get("token")) {
		c.sessions.guard.Failed(r)
		return c.showLogin(w, r, http.StatusUnauthorized, "That is not the admin token.")
	}
	c.sessions.guard.Succeeded(r)
	id, _ := c.sessions.open()
	http.SetCookie(w, cookie(r, loginCookie, "", "/ui/login", -1))
	http.SetCookie(w, cookie(r, sessionCookie, id, "/ui/", int(c.sessions.ttl/time.Second)))
	http.Redirect(w, r, safeNext(r.PostForm.Get("next")), http.StatusSeeOther)
	return nil
}

// logout ends the session.
func (c *console) logout(w http.ResponseWriter, r *http.Request, _ *session) error {
	if ck, err := r.Cookie(sessionCookie); err == nil {
		c.sessions.close(ck.Value)
	}
	http.SetCookie(w, cookie(r, sessionCookie, "", "/ui/", -1))
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
	return nil
}

// safeNext keeps a redirect after sign-in inside the console: anything
// else (another host, a scheme, //host) goes to the overview.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/ui/"
	}
	return next
}
