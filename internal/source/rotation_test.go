package source

import (
	"encoding/base64"
	"errors"
	"net/http"
	"testing"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/verify"
)

// rotatingSecrets returns a new, an old and a never-configured secret of
// provider.
func rotatingSecrets(provider string) [3]string {
	if provider == "standard" {
		var s [3]string
		for i, v := range []string{"new standard secret", "old standard secret", "third standard secret"} {
			s[i] = "whsec_" + base64.StdEncoding.EncodeToString([]byte(v))
		}
		return s
	}
	return [3]string{provider + "-new", provider + "-old", provider + "-third"}
}

// TestSecretRotation: a source with [new, old] accepts a request signed
// with either and names which verified it, refuses one signed with a
// third secret, and takes one replay digest whichever secret signed.
func TestSecretRotation(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"standard", "stripe", "github",
		"shopify", "hubspot", "shippo", "hmac"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			secrets := rotatingSecrets(provider)
			cfg := presetConfig(provider)
			cfg.Secret = config.NewSecrets(secrets[0], secrets[1])
			cfg.ReplayGuard = config.ReplayGuardOn
			s := newTestSource(t, cfg)
			if s.Secrets != 2 {
				t.Errorf("Secrets = %d, want 2", s.Secrets)
			}
			body := []byte(`[{"id":"evt_rotation","eventId":1}]`)
			// signed is the request a sender holding only secret makes; one
			// webhook-id, so that the signed content is the same.
			signed := func(secret string) *http.Request {
				one := cfg
				one.Secret = config.NewSecret(secret)
				return signedRequest(t, newTestSource(t, one), "https://hooks.example.com/in/"+cfg.Name, body, "webhook-id: msg_rotation")
			}
			var digests []dedupe.Hash
			for want, secret := range secrets[:2] {
				r := signed(secret)
				got, err := s.Authenticate(r, body)
				if err != nil || got != want {
					t.Errorf("signed with secret %d: Authenticate = %d, %v", want, got, err)
				}
				d, ok := s.Digest(r, body)
				if !ok {
					t.Fatal("no replay digest")
				}
				digests = append(digests, d)
			}
			if digests[0] != digests[1] {
				t.Error("the replay digest depends on which secret verified")
			}
			if got, err := s.Authenticate(signed(secrets[2]), body); !errors.Is(err, verify.ErrMismatch) {
				t.Errorf("signed with a third secret: Authenticate = %d, %v, want ErrMismatch", got, err)
			}
		})
	}
}

// TestSecretRotationSignsWithTheFirst: the source's own signer (hookgate
// sign, tests) uses the list's first secret, the new one.
func TestSecretRotationSignsWithTheFirst(t *testing.T) {
	t.Parallel()
	cfg := presetConfig("github")
	cfg.Secret = config.NewSecrets("github-new", "github-old")
	s := newTestSource(t, cfg)
	body := []byte(`{"id":1}`)
	if got, err := s.Authenticate(signedRequest(t, s, "/in/x", body), body); got != 0 || err != nil {
		t.Errorf("Authenticate = %d, %v, want 0", got, err)
	}
	one := presetConfig("salesforce")
	if s := newTestSource(t, one); s.Secrets != 1 {
		t.Errorf("a salesforce source: Secrets = %d, want 1", s.Secrets)
	}
}
