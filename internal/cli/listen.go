package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/eventview"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/verify"
)

func init() {
	register("listen", "forward a running gateway's events to an app on this machine, re-signed, resuming where it stopped", runListen)
}

const (
	// listenRetryMin and listenRetryMax bound the wait before another try
	// of a forward the app refused or of a gateway that did not answer:
	// it doubles from the first to the second.
	listenRetryMin = time.Second
	listenRetryMax = 30 * time.Second
	// listenTimeout bounds one POST to the app and one request to the
	// admin API.
	listenTimeout = 30 * time.Second
	// listenAnswer is how much of an answer listen reads: the admin API's
	// pages (500 events) fit, and an app's error is quoted from its start.
	listenAnswer = 64 << 20
)

func runListen(ctx context.Context, args []string, std IO) error {
	fs := newFlags(doc{
		name: "listen",
		text: `Follow the events a running gateway stores, local or remote, through its
admin API, and POST each to your app (--forward), one at a time, in the
order they were stored: webhooks from real providers, on a laptop. Each
goes as a destination gets it: the body as received, its Content-Type,
the X-Hookgate-Source, -Tenant, -Scope, -Event-Id and -Entity headers,
webhook-id (the event's key) and a Standard Webhooks signature
(webhook-timestamp, webhook-signature) made with a development secret
that listen prints at start and keeps with the cursor: the same at every
start. --raw sends instead the body and the headers the gateway kept of
the provider's request (its id and timestamp headers), unsigned.

A cursor on disk (one per gateway, source and --forward in the user
cache directory, or --cursor) moves past an event only once the app has
answered it 2xx, so the events stored while listen was off arrive at its
next start. An event the app refuses or does not answer is sent again
after 1s, 2s, 4s ... 30s, and the events after it wait. Without a cursor
listen starts after the newest event; --from starts elsewhere and
replaces the cursor: an event id (0: the first event), a time, or a
duration ago. The gateway's admin address and token come from its config
(admin.listen, else listen; admin.token, env: and file: read as serve
reads them) or from --url and --token. Ctrl-C stops it.`,
		examples: []string{
			"listen --forward http://localhost:3000/hooks --config hookgate.yaml",
			"listen --forward http://localhost:3000/hooks --config hookgate.yaml --source stripe --from 2h",
			"listen --forward http://localhost:3000/hooks --url https://admin.example.com --token $HOOKGATE_ADMIN_TOKEN --raw",
		},
	}, std)
	forward := fs.String("forward", "", "the `URL` of your app that each event is POSTed to (required)")
	source := fs.String("source", "", "only events of this `SOURCE`")
	from := fs.String("from", "", "start at `WHERE`, replacing the cursor: last (after the newest event: the default without a cursor), an event ID, a time (2026-03-01T10:00:00Z) or a duration ago (2h, 7d)")
	configPath := fs.String("config", os.Getenv("HOOKGATE_CONFIG"), "the gateway's config `FILE`, for its admin address and admin.token (default $HOOKGATE_CONFIG)")
	target := fs.String("url", "", "the gateway's admin API at `URL` (instead of the config's address)")
	token := fs.String("token", "", "the admin `TOKEN` (default $HOOKGATE_ADMIN_TOKEN; instead of the config's)")
	raw := fs.Bool("raw", false, "send the body and the headers the gateway kept of the provider's request, unsigned")
	cursorPath := fs.String("cursor", "", "keep the cursor and the secret in `FILE` (default: a file per gateway, source and --forward in the user cache directory)")
	interval := fs.Duration("interval", time.Second, "look for new events every `DURATION`")
	if err := fs.parse(args, false); err != nil {
		return err
	}
	if *forward == "" {
		return usagef("listen: give --forward, your app's URL (run 'hookgate listen --help')")
	}
	if !absoluteHTTP(*forward) {
		return usagef("listen: --forward %q is not an absolute http or https URL", *forward)
	}
	if *interval <= 0 {
		return usagef("listen: --interval must be positive")
	}
	place, err := parseFrom(*from, time.Now())
	if err != nil {
		return err
	}
	base, tok, err := listenGateway(*configPath, *target, cmp.Or(*token, os.Getenv("HOOKGATE_ADMIN_TOKEN")))
	if err != nil {
		return err
	}
	if *cursorPath == "" {
		if *cursorPath, err = defaultCursor(base, *source, *forward); err != nil {
			return err
		}
	}
	c, err := loadCursor(*cursorPath, base, *source)
	if err != nil {
		return err
	}
	c.Forward = *forward

	l := &listenRun{
		std:     std,
		client:  &adminClient{base: base, token: tok, http: &http.Client{Timeout: listenTimeout}},
		forward: *forward,
		cursor:  *cursorPath,
		c:       c,
		// A redirect would be followed with the signed request sent
		// again, to a URL nobody gave: it is a failure to fix instead.
		http: &http.Client{Timeout: listenTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
	if !*raw {
		if l.signer, err = verify.NewStandard(c.Secret); err != nil {
			return fmt.Errorf("listen: cursor %s: secret: %w (delete the file for a new one)", *cursorPath, err)
		}
	}
	l.banner(*source, *raw)

	fl := &follower{store: l.client, filter: inbox.Filter{Source: *source}, settle: tailSettle, now: time.Now}
	var where string
	err = l.retry(ctx, func() (err error) {
		switch {
		case place != nil:
			where, err = place(ctx, fl)
		case c.known:
			fl.resume(c.From, c.Done)
			where = "the cursor"
		default:
			where, err = placeLast(ctx, fl)
		}
		return err
	})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	c.From, c.Done = fl.position()
	if err := l.save(c.progress); err != nil {
		return err
	}
	after := "the events from the first one"
	if last := max(c.From, slices.Max(append([]int64{0}, c.Done...))); last > 0 {
		after = "the events after event " + strconv.FormatInt(last, 10)
	}
	fmt.Fprintf(std.Stderr, "hookgate listen: ready: forwarding %s (%s); Ctrl-C to stop\n", after, where)

	r := &relay{fl: fl, handle: l.handle, save: l.save, saved: c.progress}
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for {
		err := l.retry(ctx, func() error { return r.step(ctx) })
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// absoluteHTTP reports whether s is an absolute http or https URL.
func absoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https")
}

// listenGateway is the admin API's base URL and token: --url and --token
// when given, the config's otherwise (its admin.listen address, else its
// listen address; its admin.token, read as serve reads it).
func listenGateway(configPath, target, token string) (base, tok string, err error) {
	if configPath != "" && (target == "" || token == "") {
		cfg, err := config.Load(configPath)
		if err != nil {
			return "", "", err
		}
		if token == "" {
			if token = cfg.Admin.Token.Value(); token == "" {
				return "", "", usagef("listen: the config %s has no admin.token: its admin API is off, and listen reads the events through it", configPath)
			}
		}
		if target == "" {
			if target, err = listenBase(cmp.Or(cfg.Admin.Listen, cfg.Listen)); err != nil {
				return "", "", err
			}
		}
	}
	switch {
	case target == "":
		return "", "", usagef("listen: give --config (or set HOOKGATE_CONFIG), or --url and --token")
	case !absoluteHTTP(target):
		return "", "", usagef("listen: --url %q is not an absolute http or https URL", target)
	case token == "":
		return "", "", usagef("listen: --url needs --token (or HOOKGATE_ADMIN_TOKEN)")
	}
	return strings.TrimSuffix(target, "/"), token, nil
}

// placer places a follower where --from says and describes the place.
type placer func(ctx context.Context, fl *follower) (string, error)

// parseFrom reads --from; nil for none.
func parseFrom(v string, now time.Time) (placer, error) {
	switch {
	case v == "":
		return nil, nil
	case v == "last":
		return placeLast, nil
	case strings.Trim(v, "0123456789") == "":
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, usagef("listen: --from %q: not an event id", v)
		}
		return func(_ context.Context, fl *follower) (string, error) {
			fl.resume(id, nil)
			return "--from " + v, nil
		}, nil
	}
	t, err := parseWhen(v, now)
	if err != nil {
		return nil, usagef("listen: --from %q: want last, an event id, a time (2026-03-01T10:00:00Z, 2026-03-01) or a duration ago (2h, 7d)", v)
	}
	return func(ctx context.Context, fl *follower) (string, error) {
		id, err := lastBefore(ctx, fl.store, fl.filter, t)
		if err != nil {
			return "", err
		}
		fl.resume(id, nil)
		return "the events received before " + t.Format(time.RFC3339), nil
	}, nil
}

// placeLast places the follower after the newest event stored.
func placeLast(ctx context.Context, fl *follower) (string, error) {
	_, err := fl.start(ctx, 0)
	if fl.from == 0 {
		return "none is stored yet", err
	}
	return "the newest stored", err
}

// lastBefore returns the ID of the newest event f selects that was
// received before t, 0 when there is none, reading pages back from the
// newest.
func lastBefore(ctx context.Context, s lister, f inbox.Filter, t time.Time) (int64, error) {
	page := f
	page.Limit = tailPage
	for {
		events, err := s.List(ctx, page)
		if err != nil {
			return 0, err
		}
		for _, e := range events {
			if e.ReceivedAt.Before(t) {
				return e.ID, nil
			}
		}
		if len(events) < page.Limit {
			return 0, nil
		}
		page.BeforeID = events[len(events)-1].ID
	}
}

// progress is where a listen stands, what its cursor keeps: every event
// with an ID up to From, and every event in Done, has been taken by the
// app (answered 2xx); any other event is still to be forwarded.
//
// It is not simply the follower's position. A poll returns the events
// after the follower's reading point and may then move that point past
// some of them: events that committed late, below an ID the follower
// saw more than the settle time ago (see tailSettle). Until the app has
// taken them, a cursor at the new point would skip them on a restart. So
// a relay saves the position as it stood before the poll, and adds each
// event of the poll to Done once the app took it: a restart re-reads from
// the old point and forwards exactly the events not in Done. Once a
// poll's events are all taken, the position after it is saved, which
// drops the IDs now below From.
type progress struct {
	From int64   `json:"from"`
	Done []int64 `json:"done,omitempty"`
}

// relay hands a follower's events to handle, one at a time, in order,
// and saves its progress after each one handled.
type relay struct {
	fl *follower
	// handle forwards one event: nil once the app took it; an error when
	// it did not and will not (listen is stopping, or failed for good).
	handle func(context.Context, inbox.Event) error
	save   func(progress) error
	// saved is the progress saved last.
	saved progress
}

// step polls once and handles the new events. After an error from poll
// the follower is as it was, and step may be called again; after one
// from handle or save it counts events as returned that the app did not
// take, so listen ends, and a new relay resumes from the saved progress.
func (r *relay) step(ctx context.Context) error {
	from, done := r.fl.position()
	events, err := r.fl.poll(ctx)
	if err != nil {
		return err
	}
	for _, e := range events {
		if err := r.handle(ctx, e); err != nil {
			return err
		}
		done = append(done, e.ID)
		if err := r.put(progress{From: from, Done: done}); err != nil {
			return err
		}
	}
	from, done = r.fl.position()
	return r.put(progress{From: from, Done: done})
}

// put saves p unless it is what was saved last.
func (r *relay) put(p progress) error {
	if p.From == r.saved.From && slices.Equal(p.Done, r.saved.Done) {
		return nil
	}
	if err := r.save(p); err != nil {
		return err
	}
	r.saved = progress{From: p.From, Done: slices.Clone(p.Done)}
	return nil
}

// listenCursor is the file a listen keeps: its progress, and the secret
// it signs with.
type listenCursor struct {
	// Gateway and Source are what the IDs follow: a cursor is not used
	// for another gateway or source.
	Gateway string `json:"gateway"`
	Source  string `json:"source,omitempty"`
	// Forward is where the events went last, for whoever reads the file.
	Forward string `json:"forward"`
	// Secret is the Standard Webhooks secret forwards are signed with.
	Secret string `json:"secret"`
	progress
	// known is false for a cursor not read from a file.
	known bool
}

// defaultCursor is the cursor file of a listen from gateway's source to
// forward, in the user cache directory.
func defaultCursor(gateway, source, forward string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", usagef("listen: no user cache directory for the cursor (%v); give --cursor FILE", err)
	}
	sum := sha256.Sum256([]byte(gateway + "\n" + source + "\n" + forward))
	return filepath.Join(dir, "hookgate", "listen", hex.EncodeToString(sum[:16])+".json"), nil
}

// loadCursor reads the cursor file at path, or returns a new cursor with
// a fresh secret when there is none.
func loadCursor(path, gateway, source string) (*listenCursor, error) {
	c := &listenCursor{Gateway: gateway, Source: source}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		var key [32]byte
		rand.Read(key[:])
		c.Secret = "whsec_" + base64.StdEncoding.EncodeToString(key[:])
		return c, nil
	case err != nil:
		return nil, fmt.Errorf("listen: cursor: %w", err)
	}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("listen: cursor %s: %w (delete it to start over)", path, err)
	}
	if c.Gateway != gateway || c.Source != source {
		return nil, usagef("listen: cursor %s follows source %q of %s, not source %q of %s; give another --cursor",
			path, c.Source, c.Gateway, source, gateway)
	}
	c.known = true
	return c, nil
}

// listenRun is one run of listen.
type listenRun struct {
	std     IO
	client  *adminClient
	http    *http.Client
	forward string
	// signer is nil with --raw.
	signer *verify.Standard
	cursor string
	c      *listenCursor
}

// banner says where the events go and how they are signed.
func (l *listenRun) banner(source string, raw bool) {
	var b strings.Builder
	what := "the events"
	if source != "" {
		what = "the events of source " + source
	}
	fmt.Fprintf(&b, "hookgate listen: forwarding %s of %s to %s\n", what, l.client.base, l.forward)
	if raw {
		b.WriteString("  raw: the body and the headers the gateway kept of the provider's request, unsigned\n")
	} else {
		b.WriteString("  signed with Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature)\n")
		fmt.Fprintf(&b, "  secret: %s (the same at every start)\n", l.c.Secret)
	}
	fmt.Fprintf(&b, "  cursor: %s\n", l.cursor)
	io.WriteString(l.std.Stderr, b.String())
}

// save writes the cursor file with p: to a new file renamed over the old,
// so that the file is whole whenever listen stops.
func (l *listenRun) save(p progress) error {
	l.c.progress = p
	data, err := json.MarshalIndent(l.c, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(l.cursor)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("listen: cursor: %w", err)
	}
	f, err := os.CreateTemp(dir, filepath.Base(l.cursor)+".*")
	if err != nil {
		return fmt.Errorf("listen: cursor: %w", err)
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), l.cursor)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("listen: cursor: %w", err)
	}
	return nil
}

// retry calls fn until it succeeds, fails for good or ctx ends. While the
// gateway does not answer, or answers 429 or 5xx, it says so and waits
// (listenRetryMin, doubling up to listenRetryMax).
func (l *listenRun) retry(ctx context.Context, fn func() error) error {
	wait := listenRetryMin
	for {
		err := fn()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil || !transient(err) {
			return err
		}
		fmt.Fprintf(l.std.Stderr, "hookgate listen: %v; retrying in %s\n", err, wait)
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
		wait = min(2*wait, listenRetryMax)
	}
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// handle forwards e until the app takes it, printing a line per try. It
// returns an error only when listen stops (ctx) or the gateway fails for
// good; an event the gateway no longer has is passed over.
func (l *listenRun) handle(ctx context.Context, e inbox.Event) error {
	var d eventview.Detail
	err := l.retry(ctx, func() (err error) {
		d, err = l.client.event(ctx, e.ID)
		return err
	})
	if errors.Is(err, inbox.ErrNotFound) {
		l.line(e, 0, 0, "no longer stored (removed by the retention); passed over")
		return nil
	}
	if err != nil {
		return err
	}
	body := d.PayloadBase64
	switch {
	case body != nil:
	case d.Payload != nil:
		body = d.Payload
	default:
		body = []byte(d.PayloadText)
	}
	wait := listenRetryMin
	for {
		start := time.Now()
		code, err := l.post(ctx, d, body)
		took := time.Since(start)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			l.line(e, code, took, "")
			return nil
		}
		l.line(e, code, took, fmt.Sprintf("%v; retrying in %s", err, wait))
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
		wait = min(2*wait, listenRetryMax)
	}
}

// post makes one try to forward the event d with body; nil once the app
// answered 2xx.
func (l *listenRun) post(ctx context.Context, d eventview.Detail, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.forward, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", cmp.Or(d.Headers["Content-Type"], "application/json"))
	req.Header.Set("User-Agent", "hookgate listen")
	if l.signer == nil {
		for name, v := range d.Headers {
			req.Header.Set(name, v)
		}
	} else {
		// What a destination gets from the worker, but for the headers
		// that only applying the event decides (X-Hookgate-Transition,
		// -Tie): listen forwards events as they are stored.
		req.Header.Set("X-Hookgate-Source", d.Source)
		req.Header.Set("X-Hookgate-Tenant", d.Tenant)
		req.Header.Set("X-Hookgate-Scope", d.Scope)
		req.Header.Set("X-Hookgate-Event-Id", d.EventID)
		if d.EntityID != "" {
			req.Header.Set("X-Hookgate-Entity", d.EntityType+"/"+d.EntityID)
		}
		req.Header.Set(verify.HeaderWebhookID, d.Key)
		if err := l.signer.Sign(req, body); err != nil {
			return 0, err
		}
	}
	resp, err := l.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	// The rest is read, up to a bound, so that the connection carries the
	// next event.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, nil
	}
	msg := "the app answered " + resp.Status
	if loc := resp.Header.Get("Location"); resp.StatusCode < 400 && loc != "" {
		msg += " to " + cut(loc, 200) + " (redirects are not followed: give --forward the final URL)"
	}
	if text := strings.Join(strings.Fields(string(head)), " "); text != "" {
		msg += ": " + cut(text, 200)
	}
	return resp.StatusCode, errors.New(msg)
}

// line prints one try of forwarding e: when, the event, the app's status
// ("error" for no answer), how long it took, and what went wrong.
func (l *listenRun) line(e inbox.Event, code int, took time.Duration, msg string) {
	status := "error"
	if code != 0 {
		status = strconv.Itoa(code)
	}
	fields := []string{time.Now().Format(time.DateTime), strconv.FormatInt(e.ID, 10), escape(orDash(e.Type)),
		escape(orDash(e.Source)), status, took.Round(100 * time.Microsecond).String()}
	if msg != "" {
		fields = append(fields, escape(msg))
	}
	fmt.Fprintln(l.std.Stdout, strings.Join(fields, "  "))
}

// adminClient reads a gateway's events through its admin API.
type adminClient struct {
	base, token string
	http        *http.Client
}

var _ lister = (*adminClient)(nil)

// gatewayDown is a request to the admin API that got no answer.
type gatewayDown struct {
	base string
	err  error
}

func (e *gatewayDown) Error() string {
	return "the gateway at " + e.base + " did not answer: " + e.err.Error()
}
func (e *gatewayDown) Unwrap() error { return e.err }

// apiError is an answer of the admin API other than 200.
type apiError struct {
	base, url string
	code      int
	status    string
	msg       string
}

func (e *apiError) Error() string {
	switch e.code {
	case http.StatusUnauthorized:
		return fmt.Sprintf("the gateway at %s refused the admin token (%s: %s): give the gateway's admin.token (--token, or --config with the gateway's config)", e.base, e.status, e.msg)
	case http.StatusNotFound:
		return fmt.Sprintf("GET %s answered %s: is it the gateway's admin address? (with admin.listen set, the admin API is served there alone)", e.url, e.status)
	}
	return fmt.Sprintf("GET %s answered %s: %s", e.url, e.status, e.msg)
}

// transient reports whether err may pass if tried again: no answer, 429
// or 5xx.
func transient(err error) bool {
	var down *gatewayDown
	var ae *apiError
	switch {
	case errors.As(err, &down):
		return true
	case errors.As(err, &ae):
		return ae.code == http.StatusTooManyRequests || ae.code >= 500
	}
	return false
}

// get asks the admin API for path with query q and decodes the answer
// into v.
func (c *adminClient) get(ctx context.Context, path string, q url.Values, v any) error {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return &gatewayDown{base: c.base, err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, listenAnswer))
	if err != nil {
		return &gatewayDown{base: c.base, err: err}
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		json.Unmarshal(data, &e)
		return &apiError{base: c.base, url: u, code: resp.StatusCode, status: resp.Status,
			msg: cmp.Or(e.Error, cut(strings.Join(strings.Fields(string(data)), " "), 200))}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("GET %s: not an answer of hookgate's admin API: %w", u, err)
	}
	return nil
}

// List reads one page of events (GET /api/events), as inbox.Store.List
// returns them.
func (c *adminClient) List(ctx context.Context, f inbox.Filter) ([]inbox.Event, error) {
	q := url.Values{"limit": {strconv.Itoa(f.PageSize())}}
	if f.Source != "" {
		q.Set("source", f.Source)
	}
	if f.Tenant != "" {
		q.Set("tenant", f.Tenant)
	}
	if f.AfterID > 0 {
		q.Set("after", strconv.FormatInt(f.AfterID, 10))
	}
	if f.BeforeID > 0 {
		q.Set("before", strconv.FormatInt(f.BeforeID, 10))
	}
	var page struct {
		Events []eventview.Event `json:"events"`
	}
	if err := c.get(ctx, "/api/events", q, &page); err != nil {
		return nil, err
	}
	out := make([]inbox.Event, len(page.Events))
	for i, v := range page.Events {
		if f.AfterID > 0 && v.ID <= f.AfterID {
			// A gateway that does not read after= answers the newest
			// page: following it would forward old events again.
			return nil, fmt.Errorf("the gateway at %s answered event %d to after=%d: it is older than this hookgate and cannot be followed; upgrade it", c.base, v.ID, f.AfterID)
		}
		hash, err := dedupe.ParseHash(v.Key)
		if err != nil {
			return nil, fmt.Errorf("the gateway at %s: event %d: key %q: %w", c.base, v.ID, v.Key, err)
		}
		out[i] = inbox.Event{ID: v.ID, Hash: hash, Scope: v.Scope, Source: v.Source, Provider: v.Provider, Tenant: v.Tenant,
			EventID: v.EventID, Type: v.Type, EntityType: v.EntityType, EntityID: v.EntityID, EntityVersion: v.EntityVersion,
			EntityState: v.EntityState, ReceivedAt: v.ReceivedAt, Status: v.Status}
	}
	return out, nil
}

// event reads one event with its body, byte for byte (GET
// /api/events/{id}?payload=base64); inbox.ErrNotFound when the gateway
// no longer has it.
func (c *adminClient) event(ctx context.Context, id int64) (eventview.Detail, error) {
	var d eventview.Detail
	err := c.get(ctx, "/api/events/"+strconv.FormatInt(id, 10), url.Values{"payload": {"base64"}}, &d)
	var ae *apiError
	if errors.As(err, &ae) && ae.code == http.StatusNotFound {
		return d, fmt.Errorf("event %d: %w", id, inbox.ErrNotFound)
	}
	return d, err
}
