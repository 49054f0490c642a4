package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/verify"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func setup(t *testing.T) (*server, *verify.Standard) {
	t.Helper()
	return setupOn(t, filepath.Join(t.TempDir(), "naive.db"))
}

// setupOn is setup on the database at path: a SQLite file or a
// PostgreSQL URL.
func setupOn(t *testing.T, path string) (*server, *verify.Standard) {
	t.Helper()
	db, d, err := openDB(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	signer, err := verify.NewStandard(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newServer(context.Background(), db, d, signer)
	if err != nil {
		t.Fatal(err)
	}
	return s, signer
}

// post sends body as event id, signed with signer, and returns the status.
func post(t *testing.T, s *server, signer *verify.Standard, id, body string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/in/app", strings.NewReader(body))
	req.Header.Set(verify.HeaderWebhookID, id)
	if err := signer.Sign(req, []byte(body)); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec.Code
}

func count(t *testing.T, s *server, table string) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestIntakeStoresOnce(t *testing.T) {
	t.Parallel()
	s, signer := setup(t)
	storesOnce(t, s, signer)
}

func TestIntakeStoresOncePostgres(t *testing.T) {
	t.Parallel()
	s, signer := setupOn(t, pgtest.New(t))
	storesOnce(t, s, signer)
}

func storesOnce(t *testing.T, s *server, signer *verify.Standard) {
	t.Helper()
	if got := post(t, s, signer, "evt-1", `{"n":1}`); got != http.StatusAccepted {
		t.Errorf("first delivery = %d, want 202", got)
	}
	if got := post(t, s, signer, "evt-1", `{"n":1}`); got != http.StatusOK {
		t.Errorf("redelivery = %d, want 200", got)
	}
	if got := post(t, s, signer, "evt-2", `{"n":2}`); got != http.StatusAccepted {
		t.Errorf("second event = %d, want 202", got)
	}
	if k, e := count(t, s, "keys"), count(t, s, "events"); k != 2 || e != 2 {
		t.Errorf("keys %d, events %d, want 2 and 2", k, e)
	}
	var payload []byte
	if err := s.db.QueryRow(`SELECT payload FROM events WHERE id = 'evt-2'`).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(payload, []byte(`{"n":2}`)) {
		t.Errorf("stored payload %q, want %q", payload, `{"n":2}`)
	}
}

func TestIntakeRejectsWithoutStoring(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	other, err := verify.NewStandard("whsec_" + "c2VjcmV0LW9mLXNvbWVvbmUtZWxzZQ==")
	if err != nil {
		t.Fatal(err)
	}
	if got := post(t, s, other, "evt-1", `{}`); got != http.StatusUnauthorized {
		t.Errorf("wrong secret = %d, want 401", got)
	}
	req := httptest.NewRequest(http.MethodPost, "/in/app", strings.NewReader(strings.Repeat("x", maxBody+1)))
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body = %d, want 413", rec.Code)
	}
	if k, e := count(t, s, "keys"), count(t, s, "events"); k != 0 || e != 0 {
		t.Errorf("keys %d, events %d, want nothing stored", k, e)
	}
}

func TestIntakeStoreDown(t *testing.T) {
	t.Parallel()
	s, signer := setup(t)
	s.db.Close()
	if got := post(t, s, signer, "evt-1", `{}`); got != http.StatusServiceUnavailable {
		t.Errorf("closed store = %d, want 503", got)
	}
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("GET /healthz = %d, want 200", rec.Code)
	}
}
