package verify_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// schemeCase describes one scheme for the tests every scheme must pass.
type schemeCase struct {
	name   string // the scheme name errors carry
	secret string
	other  string // a second valid secret
	newFn  func(secret string, opts ...verify.Option) (signer, error)
	zero   signer // a verifier not built by its constructor
	body   []byte
	// tamper changes body so that it must no longer verify.
	tamper func([]byte) []byte
	// header is the header whose absence is ErrMissing ("" for token schemes).
	header string
	// timestamped schemes honour WithClock and WithTolerance.
	timestamped bool
	// empty builds the verifier with its required value empty; nil means
	// newFn("").
	empty func() error
}

func appendByte(b []byte) []byte { return append(bytes.Clone(b), ' ') }

func salesforceFixture(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "salesforce", "outbound.xml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func schemeCases(t testing.TB) []schemeCase {
	jsonBody := []byte(`{"id":"evt_1","object":"event","data":{"object":{"id":"ch_1","status":"succeeded"}}}`)
	sfBody := salesforceFixture(t)
	return []schemeCase{
		{
			name: "standard", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", other: "whsec_c2Vjb25kLXNlY3JldC1vZi0yNC1ieXRlcw==",
			newFn: func(s string, o ...verify.Option) (signer, error) { return verify.NewStandard(s, o...) },
			zero:  &verify.Standard{}, body: jsonBody, tamper: appendByte, header: verify.HeaderWebhookSignature, timestamped: true,
		},
		{
			name: "stripe", secret: "whsec_test_secret", other: "whsec_test_secret_rolled_key",
			newFn: func(s string, o ...verify.Option) (signer, error) { return verify.NewStripe(s, o...) },
			zero:  &verify.Stripe{}, body: jsonBody, tamper: appendByte, header: verify.HeaderStripeSignature, timestamped: true,
		},
		{
			name: "github", secret: "It's a Secret to Everybody", other: "another secret",
			newFn: func(s string, o ...verify.Option) (signer, error) { return verify.NewGitHub(s, o...) },
			zero:  &verify.GitHub{}, body: jsonBody, tamper: appendByte, header: verify.HeaderGitHubSignature,
		},
		{
			name: "shopify", secret: "hush", other: "hush-rotated",
			newFn: func(s string, o ...verify.Option) (signer, error) { return verify.NewShopify(s, o...) },
			zero:  &verify.Shopify{}, body: jsonBody, tamper: appendByte, header: verify.HeaderShopifyHMAC,
		},
		{
			name: "hubspot", secret: "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy", other: "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz",
			newFn: func(s string, o ...verify.Option) (signer, error) { return verify.NewHubSpot(s, o...) },
			zero:  &verify.HubSpot{}, body: []byte(`[{"eventId":1,"subscriptionId":12345,"portalId":62515}]`), tamper: appendByte,
			header: verify.HeaderHubSpotSignatureV3, timestamped: true,
		},
		{
			name: "shippo", secret: "shippo_test_secret", other: "shippo_other_secret",
			newFn: func(s string, o ...verify.Option) (signer, error) { return verify.NewShippo(s, "", o...) },
			zero:  &verify.Shippo{}, body: jsonBody, tamper: appendByte, header: verify.HeaderShippoSignature, timestamped: true,
		},
		{
			name: "shippo", secret: "tok_7f3a9c", other: "tok_other",
			newFn: func(s string, o ...verify.Option) (signer, error) { return verify.NewShippo("", s, o...) },
			zero:  &verify.Shippo{}, body: jsonBody,
			// A token does not authenticate the body: only the token can be wrong.
		},
		{
			name: "salesforce", secret: "sf-token-1", other: "sf-token-2",
			newFn: func(s string, o ...verify.Option) (signer, error) {
				return verify.NewSalesforce("00D000000000062EAA", s, o...)
			},
			zero: &verify.Salesforce{}, body: sfBody,
			empty: func() error { _, err := verify.NewSalesforce("", "sf-token-1"); return err },
			tamper: func(b []byte) []byte {
				return bytes.Replace(b, []byte("00D000000000062EAA"), []byte("00D000000000063EAA"), 1)
			},
		},
		{
			name: "hmac", secret: "Jefe", other: "Jeff",
			newFn: func(s string, o ...verify.Option) (signer, error) {
				return verify.NewHMAC(s, verify.HMACConfig{Header: "X-Signature", Algorithm: "sha512", Encoding: "base64", Prefix: "sha512="}, o...)
			},
			zero: &verify.HMAC{}, body: jsonBody, tamper: appendByte, header: "X-Signature",
		},
	}
}

var epoch = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func TestEveryScheme(t *testing.T) {
	t.Parallel()
	for _, sc := range schemeCases(t) {
		t.Run(sc.name+"/"+sc.secret, func(t *testing.T) {
			t.Parallel()
			v, err := sc.newFn(sc.secret, verify.WithClock(clockAt(epoch)))
			if err != nil {
				t.Fatal(err)
			}
			sign := func(t *testing.T, s signer, body []byte) *http.Request {
				t.Helper()
				r := post("https://hooks.example.com/in/" + sc.name + "?tenant=acme")
				if err := s.Sign(r, body); err != nil {
					t.Fatalf("Sign: %v", err)
				}
				return r
			}

			t.Run("round trip", func(t *testing.T) {
				r := sign(t, v, sc.body)
				r.Body = bodyUnread{t}
				if err := v.Verify(r, sc.body); err != nil {
					t.Fatalf("Verify after Sign: %v", err)
				}
			})

			t.Run("wrong secret", func(t *testing.T) {
				other, err := sc.newFn(sc.other, verify.WithClock(clockAt(epoch)))
				if err != nil {
					t.Fatal(err)
				}
				want := sign(t, v, sc.body) // what v expects, which must not leak
				r := sign(t, other, sc.body)
				err = v.Verify(r, sc.body)
				wantErr(t, err, verify.ErrMismatch, sc.name, sc.secret, sc.other)
				for _, vals := range want.Header {
					noSecrets(t, err, vals...)
				}
			})

			t.Run("tampered body", func(t *testing.T) {
				if sc.tamper == nil {
					t.Skip("a URL token does not cover the body")
				}
				r := sign(t, v, sc.body)
				wantErr(t, v.Verify(r, sc.tamper(sc.body)), verify.ErrMismatch, sc.name, sc.secret)
			})

			t.Run("missing", func(t *testing.T) {
				r := sign(t, v, sc.body)
				if sc.header != "" {
					r.Header.Del(sc.header)
				} else {
					r.URL.RawQuery = "tenant=acme"
				}
				wantErr(t, v.Verify(r, sc.body), verify.ErrMissing, sc.name, sc.secret)
			})

			t.Run("empty secret", func(t *testing.T) {
				empty := sc.empty
				if empty == nil {
					empty = func() error { _, err := sc.newFn(""); return err }
				}
				wantErr(t, empty(), verify.ErrConfig, sc.name)
			})

			t.Run("zero value fails closed", func(t *testing.T) {
				r := sign(t, v, sc.body)
				wantErr(t, sc.zero.Verify(r, sc.body), verify.ErrConfig, sc.name)
				wantErr(t, sc.zero.Sign(post("https://hooks.example.com/"), sc.body), verify.ErrConfig, sc.name)
			})

			t.Run("signed digest", func(t *testing.T) {
				digest := func(r *http.Request, body []byte) [32]byte {
					return v.(verify.Digester).SignedDigest(r, body)
				}
				r := sign(t, v, sc.body)
				want := digest(r, sc.body)

				// A replay with unsigned parts changed still verifies and
				// has the same digest: the replay guard must see through it.
				replay := r.Clone(t.Context())
				replay.Header.Set("X-GitHub-Delivery", "another-delivery")
				replay.Header.Set("X-Shopify-Shop-Domain", "victim.myshopify.com")
				if sc.name != "hubspot" { // HubSpot signs the URL
					replay.URL.Path += "/tenantB"
				}
				if err := v.Verify(replay, sc.body); err != nil {
					t.Fatalf("Verify of the replay: %v", err)
				}
				if got := digest(replay, sc.body); got != want {
					t.Errorf("digest changed with unsigned parts: %x, want %x", got, want)
				}
				if sc.tamper != nil {
					if got := digest(r, sc.tamper(sc.body)); got == want {
						t.Errorf("digest did not change with the body")
					}
				}
				if sc.timestamped {
					later, err := sc.newFn(sc.secret, verify.WithClock(clockAt(epoch.Add(time.Second))))
					if err != nil {
						t.Fatal(err)
					}
					if got := digest(sign(t, later, sc.body), sc.body); got == want {
						t.Errorf("digest did not change with the signed timestamp")
					}
				}
			})

			t.Run("tolerance", func(t *testing.T) {
				if !sc.timestamped {
					t.Skip("scheme has no timestamp")
				}
				r := sign(t, v, sc.body)
				for _, tc := range []struct {
					name string
					now  time.Time
					tol  time.Duration
					want error
				}{
					{"at the edge in the past", epoch.Add(verify.DefaultTolerance), 0, nil},
					{"at the edge in the future", epoch.Add(-verify.DefaultTolerance), 0, nil},
					{"stale", epoch.Add(verify.DefaultTolerance + time.Second), 0, verify.ErrStale},
					{"future", epoch.Add(-verify.DefaultTolerance - time.Second), 0, verify.ErrStale},
					{"stale with a shorter tolerance", epoch.Add(11 * time.Second), 10 * time.Second, verify.ErrStale},
					{"fresh with a longer tolerance", epoch.Add(time.Hour), 2 * time.Hour, nil},
				} {
					opts := []verify.Option{verify.WithClock(clockAt(tc.now))}
					if tc.tol != 0 {
						opts = append(opts, verify.WithTolerance(tc.tol))
					}
					late, err := sc.newFn(sc.secret, opts...)
					if err != nil {
						t.Fatal(err)
					}
					err = late.Verify(r, sc.body)
					if tc.want == nil {
						if err != nil {
							t.Errorf("%s: %v", tc.name, err)
						}
						continue
					}
					wantErr(t, err, tc.want, sc.name, sc.secret)
				}
			})
		})
	}
}
