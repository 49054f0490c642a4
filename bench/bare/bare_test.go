package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	t.Parallel()
	h := newHandler()
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{http.MethodPost, "/in/app", `{"a":1}`, http.StatusAccepted},
		{http.MethodPost, "/in/app", strings.Repeat("x", maxBody+1), http.StatusRequestEntityTooLarge},
		{http.MethodGet, "/in/app", "", http.StatusMethodNotAllowed},
		{http.MethodPost, "/other", "", http.StatusNotFound},
		{http.MethodGet, "/healthz", "", http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		if rec.Code != tc.want {
			t.Errorf("%s %s (%d bytes) = %d, want %d", tc.method, tc.path, len(tc.body), rec.Code, tc.want)
		}
	}
}
