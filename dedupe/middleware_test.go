package dedupe_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/dedupe/memory"
)

const idHeader = "Webhook-Id"

var errMissingID = errors.New("missing " + idHeader)

// headerKey takes the event id from the Webhook-Id header.
func headerKey(r *http.Request) (dedupe.Key, error) {
	id := r.Header.Get(idHeader)
	if id == "" {
		return dedupe.Key{}, errMissingID
	}
	return dedupe.Key{Provider: "test", EventID: id}, nil
}

type bundle struct {
	clock *dedupetest.Clock
	store *memory.Store
	calls atomic.Int32
}

func setup(t *testing.T) *bundle {
	t.Helper()
	clock := dedupetest.NewClock(time.Date(2030, time.March, 4, 5, 6, 7, 0, time.UTC))
	return &bundle{clock: clock, store: memory.New(memory.Options{Now: clock.Now})}
}

// wrap puts the middleware, on the bundle's store and clock, around h and
// counts the handler's calls.
func (b *bundle) wrap(store dedupe.Store, opts dedupe.MiddlewareOptions, h http.HandlerFunc) http.Handler {
	if opts.Now == nil {
		opts.Now = b.clock.Now
	}
	return dedupe.Middleware(store, headerKey, opts)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.calls.Add(1)
		h(w, r)
	}))
}

func do(h http.Handler, id, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/in/test", strings.NewReader(body))
	if id != "" {
		req.Header.Set(idHeader, id)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// peek reports what a claim of the event id finds, leaving the store as it was.
func (b *bundle) peek(t *testing.T, id string) dedupe.Result {
	t.Helper()
	h := dedupe.Key{Provider: "test", EventID: id}.Hash()
	r, err := dedupe.ClaimOne(t.Context(), b.store, time.Second, h)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status == dedupe.New {
		if err := b.store.Release(t.Context(), r.Lease); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func (b *bundle) wantStored(t *testing.T, id string, want dedupe.Status) {
	t.Helper()
	if got := b.peek(t, id).Status; got != want {
		t.Fatalf("key %s in the store: %s, want %s", id, got, want)
	}
}

func (b *bundle) wantCalls(t *testing.T, want int32) {
	t.Helper()
	if got := b.calls.Load(); got != want {
		t.Fatalf("handler ran %d times, want %d", got, want)
	}
}

// wantReply checks a response the middleware wrote itself.
func wantReply(t *testing.T, rec *httptest.ResponseRecorder, code int, status string) map[string]string {
	t.Helper()
	if rec.Code != code {
		t.Fatalf("status %d, want %d (body %q)", rec.Code, code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	if body["status"] != status {
		t.Errorf("body status %q, want %q", body["status"], status)
	}
	return body
}

func accept(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, "accepted")
}

func TestMiddlewareNewThenDuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := b.wrap(b.store, dedupe.MiddlewareOptions{}, accept)

	first := do(h, "evt_1", "{}")
	if first.Code != http.StatusAccepted || first.Body.String() != "accepted" {
		t.Fatalf("first delivery: %d %q, want 202 from the handler", first.Code, first.Body)
	}
	if first.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("first delivery marked as replayed")
	}
	b.wantStored(t, "evt_1", dedupe.Duplicate)

	for range 2 {
		dup := do(h, "evt_1", "{}")
		wantReply(t, dup, http.StatusOK, "duplicate")
		if got := dup.Header().Get("Idempotent-Replayed"); got != "true" {
			t.Fatalf("Idempotent-Replayed = %q, want true", got)
		}
	}
	b.wantCalls(t, 1)

	if other := do(h, "evt_2", "{}"); other.Code != http.StatusAccepted {
		t.Fatalf("another event: %d, want 202", other.Code)
	}
	b.wantCalls(t, 2)
}

func TestMiddlewareCommitsImplicitOK(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]http.HandlerFunc{
		"nothing written": func(http.ResponseWriter, *http.Request) {},
		"body only":       func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") },
		"flush only":      func(w http.ResponseWriter, _ *http.Request) { w.(http.Flusher).Flush() },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if rec := do(b.wrap(b.store, dedupe.MiddlewareOptions{}, h), "evt_1", ""); rec.Code != http.StatusOK {
				t.Fatalf("status %d, want 200", rec.Code)
			}
			b.wantStored(t, "evt_1", dedupe.Duplicate)
		})
	}
}

func TestMiddlewareReleasesOnOtherStatus(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusNotModified, http.StatusBadRequest, http.StatusNotFound, http.StatusInternalServerError, http.StatusServiceUnavailable} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			fail := true
			h := b.wrap(b.store, dedupe.MiddlewareOptions{}, func(w http.ResponseWriter, r *http.Request) {
				if fail {
					w.WriteHeader(code)
					return
				}
				accept(w, r)
			})
			if rec := do(h, "evt_1", ""); rec.Code != code {
				t.Fatalf("status %d, want the handler's %d", rec.Code, code)
			}
			b.wantStored(t, "evt_1", dedupe.New)

			fail = false
			if rec := do(h, "evt_1", ""); rec.Code != http.StatusAccepted {
				t.Fatalf("retry: status %d, want 202", rec.Code)
			}
			b.wantCalls(t, 2)
			b.wantStored(t, "evt_1", dedupe.Duplicate)
		})
	}
}

func TestMiddlewarePanic(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name   string
		status int
		value  any
		want   dedupe.Status
	}{
		{"before status", 0, errBoom, dedupe.New},
		{"abort handler", 0, http.ErrAbortHandler, dedupe.New},
		{"after error status", http.StatusInternalServerError, errBoom, dedupe.New},
		{"after committed status", http.StatusAccepted, errBoom, dedupe.Duplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			h := b.wrap(b.store, dedupe.MiddlewareOptions{}, func(w http.ResponseWriter, _ *http.Request) {
				if tc.status != 0 {
					w.WriteHeader(tc.status)
				}
				panic(tc.value)
			})
			got := func() (v any) {
				defer func() { v = recover() }()
				do(h, "evt_1", "")
				return nil
			}()
			if got != tc.value {
				t.Fatalf("panic value %v, want %v passed on", got, tc.value)
			}
			b.wantStored(t, "evt_1", tc.want)
		})
	}
}

func TestMiddlewareInFlightRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		advance, skew  time.Duration
		wantRetryAfter string
	}{
		{"whole lease left", 0, 0, "30"},
		{"whole seconds left", 10 * time.Second, 0, "20"},
		{"rounds up", 10*time.Second + 500*time.Millisecond, 0, "20"},
		{"last fraction", 29*time.Second + 900*time.Millisecond, 0, "1"},
		{"clock ahead of the store", 0, time.Hour, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if _, err := b.store.Claim(t.Context(), 30*time.Second, dedupe.Key{Provider: "test", EventID: "evt_1"}.Hash()); err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(tc.advance)
			h := b.wrap(b.store, dedupe.MiddlewareOptions{Now: func() time.Time { return b.clock.Now().Add(tc.skew) }}, accept)
			rec := do(h, "evt_1", "")
			wantReply(t, rec, http.StatusConflict, "in-flight")
			if got := rec.Header().Get("Retry-After"); got != tc.wantRetryAfter {
				t.Fatalf("Retry-After %q, want %q", got, tc.wantRetryAfter)
			}
			b.wantCalls(t, 0)
		})
	}
}

func TestMiddlewareConcurrentCopies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	entered, proceed := make(chan struct{}), make(chan struct{})
	h := b.wrap(b.store, dedupe.MiddlewareOptions{}, func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-proceed
		accept(w, r)
	})
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- do(h, "evt_1", "{}") }()
	<-entered

	copyRec := do(h, "evt_1", "{}")
	wantReply(t, copyRec, http.StatusConflict, "in-flight")
	if got := copyRec.Header().Get("Retry-After"); got != "30" {
		t.Fatalf("Retry-After %q, want 30", got)
	}

	close(proceed)
	if first := <-done; first.Code != http.StatusAccepted {
		t.Fatalf("first copy: %d, want 202", first.Code)
	}
	wantReply(t, do(h, "evt_1", "{}"), http.StatusOK, "duplicate")
	b.wantCalls(t, 1)
}

func TestMiddlewareKeyError(t *testing.T) {
	t.Parallel()
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		body := wantReply(t, do(b.wrap(b.store, dedupe.MiddlewareOptions{}, accept), "", "{}"), http.StatusBadRequest, "bad-request")
		if !strings.Contains(body["error"], errMissingID.Error()) {
			t.Errorf("error %q does not say %q", body["error"], errMissingID)
		}
		b.wantCalls(t, 0)
	})
	t.Run("OnError", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var got error
		h := b.wrap(b.store, dedupe.MiddlewareOptions{OnError: func(w http.ResponseWriter, _ *http.Request, err error) {
			got = err
			w.WriteHeader(http.StatusUnprocessableEntity)
		}}, accept)
		if rec := do(h, "", "{}"); rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("status %d, want OnError's 422", rec.Code)
		}
		if !errors.Is(got, dedupe.ErrNoKey) || !errors.Is(got, errMissingID) {
			t.Fatalf("OnError got %v, want ErrNoKey wrapping the key function's error", got)
		}
		b.wantCalls(t, 0)
	})
}

// brokenStore fails the calls whose error is set and passes the rest on.
type brokenStore struct {
	dedupe.Store
	claimErr, commitErr error
}

func (s brokenStore) Claim(ctx context.Context, lease time.Duration, hs ...dedupe.Hash) ([]dedupe.Result, error) {
	if s.claimErr != nil {
		return nil, s.claimErr
	}
	return s.Store.Claim(ctx, lease, hs...)
}

func (s brokenStore) Commit(ctx context.Context, window time.Duration, leases ...dedupe.Lease) error {
	if s.commitErr != nil {
		return s.commitErr
	}
	return s.Store.Commit(ctx, window, leases...)
}

func TestMiddlewareClaimError(t *testing.T) {
	t.Parallel()
	errDown := errors.New("connection refused")
	for _, tc := range []struct {
		name  string
		cause error
	}{
		{"plain", errDown},
		{"wrapped", errors.Join(dedupe.ErrUnavailable, errDown)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			store := brokenStore{Store: b.store, claimErr: tc.cause}
			rec := do(b.wrap(store, dedupe.MiddlewareOptions{}, accept), "evt_1", "{}")
			wantReply(t, rec, http.StatusServiceUnavailable, "unavailable")
			if got := rec.Header().Get("Retry-After"); got != "5" {
				t.Fatalf("Retry-After %q, want 5", got)
			}

			var got error
			h := b.wrap(store, dedupe.MiddlewareOptions{OnError: func(w http.ResponseWriter, _ *http.Request, err error) {
				got = err
				w.WriteHeader(http.StatusTooManyRequests)
			}}, accept)
			if rec := do(h, "evt_1", "{}"); rec.Code != http.StatusTooManyRequests {
				t.Fatalf("status %d, want OnError's 429", rec.Code)
			}
			if !errors.Is(got, dedupe.ErrUnavailable) || !errors.Is(got, errDown) {
				t.Fatalf("OnError got %v, want ErrUnavailable wrapping %v", got, errDown)
			}
			b.wantCalls(t, 0)
		})
	}
}

func TestMiddlewareCommitError(t *testing.T) {
	t.Parallel()
	errDown := errors.New("connection reset")
	b := setup(t)
	var writeErr, onErr error
	inner := b.wrap(brokenStore{Store: b.store, commitErr: errDown}, dedupe.MiddlewareOptions{}, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "8")
		w.WriteHeader(http.StatusAccepted)
		_, writeErr = io.WriteString(w, "accepted")
	})
	outer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-1")
		inner.ServeHTTP(w, r)
	})

	rec := do(outer, "evt_1", "{}")
	wantReply(t, rec, http.StatusServiceUnavailable, "unavailable")
	if rec.Header().Get("Retry-After") != "5" || rec.Header().Get("X-Request-Id") != "req-1" || rec.Header().Get("Content-Length") != "" {
		t.Fatalf("headers %v: want Retry-After 5, the outer X-Request-Id, none of the handler's", rec.Header())
	}
	if !errors.Is(writeErr, dedupe.ErrUnavailable) || !errors.Is(writeErr, errDown) {
		t.Fatalf("handler's Write after a failed commit: %v, want the store error", writeErr)
	}
	b.wantStored(t, "evt_1", dedupe.New)

	// A handler that outlives its lease loses the key to a copy; its commit
	// fails and the copy keeps the key.
	var taken dedupe.Result
	h := b.wrap(b.store, dedupe.MiddlewareOptions{
		Lease: 30 * time.Second,
		OnError: func(w http.ResponseWriter, _ *http.Request, err error) {
			onErr = err
			w.WriteHeader(http.StatusServiceUnavailable)
		},
	}, func(w http.ResponseWriter, r *http.Request) {
		b.clock.Advance(31 * time.Second)
		var err error
		if taken, err = dedupe.ClaimOne(r.Context(), b.store, time.Minute, dedupe.Key{Provider: "test", EventID: "evt_2"}.Hash()); err != nil {
			t.Error(err)
		}
		accept(w, r)
	})
	if rec := do(h, "evt_2", "{}"); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("commit of a lost lease: status %d, want 503", rec.Code)
	}
	if !errors.Is(onErr, dedupe.ErrLeaseLost) {
		t.Fatalf("OnError got %v, want ErrLeaseLost", onErr)
	}
	if taken.Status != dedupe.New {
		t.Fatalf("copy after the lease ended: %s, want New", taken.Status)
	}
	b.wantStored(t, "evt_2", dedupe.InFlight)
}

func TestMiddlewareBodyReplay(t *testing.T) {
	t.Parallel()
	large := `{"id":"evt_1","pad":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, tc := range []struct {
		name string
		key  func(*http.Request) (dedupe.Key, error)
	}{
		{"reads all", func(r *http.Request) (dedupe.Key, error) {
			var v struct{ ID string }
			err := json.NewDecoder(r.Body).Decode(&v)
			return dedupe.Key{EventID: v.ID}, err
		}},
		{"reads a prefix and closes", func(r *http.Request) (dedupe.Key, error) {
			prefix := make([]byte, 12)
			_, err := io.ReadFull(r.Body, prefix)
			return dedupe.Key{EventID: string(prefix)}, errors.Join(err, r.Body.Close())
		}},
		{"reads nothing", headerKey},
	} {
		for bodyName, body := range map[string]string{"empty": "", "small": `{"id":"evt_1"}`, "1MiB": large} {
			t.Run(tc.name+"/"+bodyName, func(t *testing.T) {
				t.Parallel()
				var got string
				h := dedupe.Middleware(memory.New(memory.Options{}), tc.key, dedupe.MiddlewareOptions{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					b, err := io.ReadAll(r.Body)
					if err != nil {
						t.Error(err)
					}
					got = string(b)
					w.WriteHeader(http.StatusAccepted)
				}))
				rec := do(h, "evt_1", body)
				if body == "" && tc.name != "reads nothing" {
					if rec.Code != http.StatusBadRequest {
						t.Fatalf("empty body: status %d, want 400 from the key error", rec.Code)
					}
					return
				}
				if rec.Code != http.StatusAccepted {
					t.Fatalf("status %d, want 202 (body %q)", rec.Code, rec.Body)
				}
				if got != body {
					t.Fatalf("handler read %d bytes, want the %d sent", len(got), len(body))
				}
			})
		}
	}
}

func TestMiddlewareFlush(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var flushErr error
	h := b.wrap(b.store, dedupe.MiddlewareOptions{}, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "part")
		flushErr = http.NewResponseController(w).Flush()
	})
	rec := do(h, "evt_1", "")
	if flushErr != nil || !rec.Flushed {
		t.Fatalf("Flush through ResponseController: err %v, flushed %v", flushErr, rec.Flushed)
	}
	if rec.Code != http.StatusAccepted || rec.Body.String() != "part" {
		t.Fatalf("response %d %q, want 202 part", rec.Code, rec.Body)
	}
	b.wantStored(t, "evt_1", dedupe.Duplicate)
}

func TestMiddlewareServer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var deadlineErr error
	srv := httptest.NewServer(b.wrap(b.store, dedupe.MiddlewareOptions{}, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		deadlineErr = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Minute))
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "accepted")
		w.(http.Flusher).Flush()
	}))
	defer srv.Close()

	post := func() (*http.Response, int) {
		t.Helper()
		informational := 0
		ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
			Got1xxResponse: func(int, textproto.MIMEHeader) error { informational++; return nil },
		})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(idHeader, "evt_1")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, informational
	}

	resp, informational := post()
	if resp.StatusCode != http.StatusAccepted || informational != 1 {
		t.Fatalf("first delivery: %d after %d informational responses, want 202 after 103", resp.StatusCode, informational)
	}
	if deadlineErr != nil {
		t.Fatalf("SetWriteDeadline through the middleware: %v", deadlineErr)
	}
	resp, _ = post()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("second delivery: %d %v, want 200 replayed", resp.StatusCode, resp.Header)
	}
	b.wantCalls(t, 1)
}

func TestMiddlewareDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                  string
		opts                  dedupe.MiddlewareOptions
		wantLease, wantWindow time.Duration
	}{
		{"zero", dedupe.MiddlewareOptions{}, dedupe.LeaseDefault, dedupe.WindowDefault},
		{"negative", dedupe.MiddlewareOptions{Lease: -time.Second, Window: -time.Second}, dedupe.LeaseDefault, dedupe.WindowDefault},
		{"set", dedupe.MiddlewareOptions{Lease: 5 * time.Second, Window: time.Hour}, 5 * time.Second, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			t0 := b.clock.Now()
			var held dedupe.Result
			h := b.wrap(b.store, tc.opts, func(w http.ResponseWriter, r *http.Request) {
				held = b.peek(t, "evt_1")
				accept(w, r)
			})
			do(h, "evt_1", "")
			if held.Status != dedupe.InFlight || !held.Expires.Equal(t0.Add(tc.wantLease)) {
				t.Fatalf("while the handler runs: %s until %v, want in-flight until %v", held.Status, held.Expires, t0.Add(tc.wantLease))
			}
			if dup := b.peek(t, "evt_1"); !dup.Expires.Equal(t0.Add(tc.wantWindow)) {
				t.Fatalf("committed until %v, want %v", dup.Expires, t0.Add(tc.wantWindow))
			}
		})
	}
}

// statusStore answers every claim with a zero Result: no status at all.
type statusStore struct {
	dedupe.Store
}

func (s statusStore) Claim(_ context.Context, _ time.Duration, hs ...dedupe.Hash) ([]dedupe.Result, error) {
	return make([]dedupe.Result, len(hs)), nil
}

func TestMiddlewareUnknownStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var got error
	h := b.wrap(statusStore{Store: b.store}, dedupe.MiddlewareOptions{OnError: func(w http.ResponseWriter, _ *http.Request, err error) {
		got = err
		w.WriteHeader(http.StatusServiceUnavailable)
	}}, accept)
	if rec := do(h, "evt_1", ""); rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503 for a claim the store answered with no status", rec.Code)
	}
	if !errors.Is(got, dedupe.ErrUnavailable) {
		t.Fatalf("OnError got %v, want ErrUnavailable", got)
	}
	b.wantCalls(t, 0)
}
