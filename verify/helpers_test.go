package verify_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// clockAt returns a clock stopped at t.
func clockAt(t time.Time) func() time.Time { return func() time.Time { return t } }

// post builds a server-side POST request to target; Verify never reads its
// body, so the request carries none.
func post(target string) *http.Request {
	return httptest.NewRequest(http.MethodPost, target, http.NoBody)
}

// sentinels are the errors every failure must wrap exactly one of.
var sentinels = []error{verify.ErrConfig, verify.ErrMissing, verify.ErrMalformed, verify.ErrStale, verify.ErrMismatch}

// wantErr fails t unless err wraps want, is an *verify.Error naming scheme,
// and its message contains none of the secrets.
func wantErr(t *testing.T, err, want error, scheme string, secrets ...string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	var ve *verify.Error
	if !errors.As(err, &ve) {
		t.Fatalf("err = %T %v, want *verify.Error", err, err)
	}
	if ve.Scheme != scheme || ve.Check == "" {
		t.Fatalf("err = %+v, want scheme %q and a check", ve, scheme)
	}
	noSecrets(t, err, secrets...)
}

// noSecrets fails t if err's message contains any of the secrets.
func noSecrets(t *testing.T, err error, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(err.Error(), s) {
			t.Fatalf("error %q contains secret material %q", err, s)
		}
	}
}

// knownErr reports whether err wraps exactly one sentinel and is an *Error.
func knownErr(err error) bool {
	var ve *verify.Error
	if !errors.As(err, &ve) {
		return false
	}
	n := 0
	for _, s := range sentinels {
		if errors.Is(err, s) {
			n++
		}
	}
	return n == 1
}

// signer is what every scheme type implements.
type signer interface {
	verify.Verifier
	verify.Signer
}

// bodyUnread is an r.Body that fails the test if anything reads it.
type bodyUnread struct{ t *testing.T }

func (b bodyUnread) Read([]byte) (int, error) {
	b.t.Error("Verify read r.Body")
	return 0, io.EOF
}

func (b bodyUnread) Close() error { return nil }
