package verify_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// thirdSecret returns a valid secret of sc's scheme that is neither of its
// two.
func thirdSecret(sc schemeCase) string {
	if sc.name == "standard" {
		return "whsec_" + base64.StdEncoding.EncodeToString([]byte("a third secret, never configured"))
	}
	return sc.secret + "-third"
}

// TestAnyAcceptsEverySecret: with the new secret and the old one, a
// delivery signed with either is accepted and Match names which, one
// signed with a third is refused as a mismatch, and the replay digest is
// the same whichever secret signed.
func TestAnyAcceptsEverySecret(t *testing.T) {
	t.Parallel()
	for _, sc := range schemeCases(t) {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			scheme := func(secret string) verify.Scheme {
				t.Helper()
				s, err := sc.newFn(secret, verify.WithClock(func() time.Time { return epoch }))
				if err != nil {
					t.Fatal(err)
				}
				return s.(verify.Scheme)
			}
			rot, err := verify.NewAny(scheme(sc.other), scheme(sc.secret))
			if err != nil {
				t.Fatal(err)
			}
			if rot.Len() != 2 {
				t.Errorf("Len() = %d", rot.Len())
			}
			signed := func(secret string) *http.Request {
				t.Helper()
				r, err := http.NewRequest(http.MethodPost, "https://hooks.example.com/in/x?a=1", bytes.NewReader(sc.body))
				if err != nil {
					t.Fatal(err)
				}
				// One message: Standard Webhooks would otherwise give each
				// signing its own webhook-id, which the digest covers.
				r.Header.Set(verify.HeaderWebhookID, "msg_rotation")
				if err := scheme(secret).Sign(r, sc.body); err != nil {
					t.Fatal(err)
				}
				return r
			}
			var digests [][32]byte
			for want, secret := range []string{sc.other, sc.secret} {
				r := signed(secret)
				got, err := rot.Match(r, sc.body)
				if err != nil || got != want {
					t.Errorf("signed with secret %d: Match = %d, %v", want, got, err)
				}
				digests = append(digests, rot.SignedDigest(r, sc.body))
			}
			if digests[0] != digests[1] {
				t.Error("the digest depends on which secret signed")
			}
			got, err := rot.Match(signed(thirdSecret(sc)), sc.body)
			if !errors.Is(err, verify.ErrMismatch) || got != -1 {
				t.Errorf("signed with a third secret: Match = %d, %v, want -1, ErrMismatch", got, err)
			}
			if err := rot.Verify(signed(thirdSecret(sc)), sc.body); !errors.Is(err, verify.ErrMismatch) {
				t.Errorf("signed with a third secret: Verify = %v", err)
			}
			r, _ := http.NewRequest(http.MethodPost, "https://hooks.example.com/in/x?a=1", bytes.NewReader(sc.body))
			if err := rot.Sign(r, sc.body); err != nil {
				t.Fatal(err)
			}
			if got, err := rot.Match(r, sc.body); got != 0 || err != nil {
				t.Errorf("Sign does not sign with the first secret: Match = %d, %v", got, err)
			}
		})
	}
}

func TestAnyNeedsSchemes(t *testing.T) {
	t.Parallel()
	if _, err := verify.NewAny(); !errors.Is(err, verify.ErrConfig) {
		t.Errorf("NewAny() = %v, want ErrConfig", err)
	}
	if _, err := verify.NewAny(nil); !errors.Is(err, verify.ErrConfig) {
		t.Errorf("NewAny(nil) = %v, want ErrConfig", err)
	}
	var zero verify.Any
	if _, err := zero.Match(&http.Request{}, nil); !errors.Is(err, verify.ErrConfig) {
		t.Errorf("zero Any: Match = %v, want ErrConfig", err)
	}
}
