package verify_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookgate/hookgate/verify"
)

const hubSpotSecret = "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy"

func hubSpotRequest(method, target string, headers ...string) *http.Request {
	r := httptest.NewRequest(method, target, http.NoBody)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	return r
}

// TestHubSpotKnownAnswer uses the vectors HubSpot publishes: v1 and v2
// (GET) from the request-validation documentation, v2 (POST) from
// hubspot-api-nodejs test/unit/signature.spec.ts, v3 from
// hubspot-api-python tests/spec/utils/test_signature.py (timestamp
// 15000000 ms). All were reproduced with openssl dgst.
func TestHubSpotKnownAnswer(t *testing.T) {
	t.Parallel()
	const (
		v1Body = `[{"eventId":1,"subscriptionId":12345,"portalId":62515,"occurredAt":1564113600000,"subscriptionType":"contact.creation","attemptNumber":0,"objectId":123,"changeSource":"CRM","changeFlag":"NEW","appId":54321}]`
		uri    = "https://www.example.com/webhook_uri"
	)
	for _, tc := range []struct {
		name string
		r    *http.Request
		body string
	}{
		{"v1 docs", hubSpotRequest(http.MethodPost, uri,
			verify.HeaderHubSpotSignatureVersion, "v1",
			verify.HeaderHubSpotSignature, "232db2615f3d666fe21a8ec971ac7b5402d33b9a925784df3ca654d05f4817de"), v1Body},
		{"v2 docs GET", hubSpotRequest(http.MethodGet, uri,
			verify.HeaderHubSpotSignatureVersion, "v2",
			verify.HeaderHubSpotSignature, "eee2dddcc73c94d699f5e395f4b9d454a069a6855fbfa152e91e88823087200e"), ""},
		{"v2 nodejs POST", hubSpotRequest(http.MethodPost, uri,
			verify.HeaderHubSpotSignatureVersion, "v2",
			verify.HeaderHubSpotSignature, "9569219f8ba981ffa6f6f16aa0f48637d35d728c7e4d93d0d52efaa512af7900"), `{"example_field":"example_value"}`},
		{"v3 python", hubSpotRequest(http.MethodPost, uri,
			verify.HeaderHubSpotSignatureV3, "HPW73RUtKmcYoEDADG0s6MmGFWUzWJKAW07r8RDgcQw=",
			verify.HeaderHubSpotRequestTimestamp, "15000000"), `{'example_field':'example_value'}`},
	} {
		v, err := verify.NewHubSpot(hubSpotSecret, verify.WithClock(clockAt(time.UnixMilli(15000000))))
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Verify(tc.r, []byte(tc.body)); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		wantErr(t, v.Verify(tc.r, []byte(tc.body+" ")), verify.ErrMismatch, "hubspot", hubSpotSecret)
		if tc.r.Header.Get(verify.HeaderHubSpotSignatureV3) == "" {
			// A present v3 header decides, even when the legacy signature is valid.
			tc.r.Header.Set(verify.HeaderHubSpotSignatureV3, "HPW73RUtKmcYoEDADG0s6MmGFWUzWJKAW07r8RDgcQw=")
			tc.r.Header.Set(verify.HeaderHubSpotRequestTimestamp, "15000000")
			wantErr(t, v.Verify(tc.r, []byte(tc.body)), verify.ErrMismatch, "hubspot", hubSpotSecret)
		}
	}
}

// TestHubSpotV3DecodesURI checks HubSpot's documented decoding table
// against a vector computed by hand with
// `printf '%s' 'POSThttps://www.example.com/webhook?a,b?x=@y&z=%20w/[{"eventId":1}]1700000000000' | openssl dgst -sha256 -hmac <secret> -binary | base64`:
// %3F %2C %40 and %2f (lower case) are decoded, %20 is not.
func TestHubSpotV3DecodesURI(t *testing.T) {
	t.Parallel()
	const (
		body = `[{"eventId":1}]`
		sig  = "y1TSw9s85YhvrNNq5bLdum7ScxL7FTseOWsJ/59b49I="
		ts   = "1700000000000"
	)
	now := time.UnixMilli(1700000000000)
	v, err := verify.NewHubSpot(hubSpotSecret, verify.WithClock(clockAt(now)))
	if err != nil {
		t.Fatal(err)
	}
	headers := []string{verify.HeaderHubSpotSignatureV3, sig, verify.HeaderHubSpotRequestTimestamp, ts}

	r := hubSpotRequest(http.MethodPost, "https://www.example.com/webhook%3Fa%2Cb?x=%40y&z=%20w%2f", headers...)
	if err := v.Verify(r, []byte(body)); err != nil {
		t.Fatalf("TLS request: %v", err)
	}

	// Behind a TLS-terminating proxy: plain HTTP, scheme from X-Forwarded-Proto.
	r = hubSpotRequest(http.MethodPost, "http://www.example.com/webhook%3Fa%2Cb?x=%40y&z=%20w%2f", headers...)
	r.TLS = nil
	wantErr(t, v.Verify(r, []byte(body)), verify.ErrMismatch, "hubspot", hubSpotSecret, sig)
	r.Header.Set("X-Forwarded-Proto", "HTTPS, http")
	if err := v.Verify(r, []byte(body)); err != nil {
		t.Fatalf("X-Forwarded-Proto: %v", err)
	}

	// Behind a proxy that rewrites the path: the public URL decides.
	public, err := verify.NewHubSpot(hubSpotSecret, verify.WithClock(clockAt(now)),
		verify.WithPublicURL("https://www.example.com/webhook%3Fa%2Cb?x=%40y&z=%20w%2f"))
	if err != nil {
		t.Fatal(err)
	}
	r = hubSpotRequest(http.MethodPost, "http://10.0.0.7:8080/in/hubspot", headers...)
	if err := public.Verify(r, []byte(body)); err != nil {
		t.Fatalf("WithPublicURL: %v", err)
	}

	// %20 stays encoded: decoding it would change the signed string.
	r = hubSpotRequest(http.MethodPost, "https://www.example.com/webhook%3Fa%2Cb?x=%40y&z=+w%2f", headers...)
	wantErr(t, v.Verify(r, []byte(body)), verify.ErrMismatch, "hubspot", hubSpotSecret)
}

func TestHubSpotSignUsesClientURL(t *testing.T) {
	t.Parallel()
	v, err := verify.NewHubSpot(hubSpotSecret, verify.WithClock(clockAt(epoch)))
	if err != nil {
		t.Fatal(err)
	}
	// A client request: absolute https URL, no TLS state.
	out, err := http.NewRequest(http.MethodPost, "https://hooks.example.com/in/hubspot?portal=62515", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`[{"eventId":7}]`)
	if err := v.Sign(out, body); err != nil {
		t.Fatal(err)
	}
	if got, want := out.Header.Get(verify.HeaderHubSpotRequestTimestamp), "1714564800000"; got != want {
		t.Fatalf("timestamp %q, want %q (ms)", got, want)
	}
	// The same request as the receiving server sees it.
	in := httptest.NewRequest(http.MethodPost, "/in/hubspot?portal=62515", http.NoBody)
	in.Host = "hooks.example.com"
	in.TLS = &tls.ConnectionState{}
	in.Header = out.Header.Clone()
	if err := v.Verify(in, body); err != nil {
		t.Fatal(err)
	}
}

func TestHubSpotHeaders(t *testing.T) {
	t.Parallel()
	v, err := verify.NewHubSpot(hubSpotSecret, verify.WithClock(clockAt(epoch)))
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`[{"eventId":1}]`)
	signed := hubSpotRequest(http.MethodPost, "https://hooks.example.com/in/hubspot")
	if err := v.Sign(signed, body); err != nil {
		t.Fatal(err)
	}
	sig := signed.Header.Get(verify.HeaderHubSpotSignatureV3)
	ts := signed.Header.Get(verify.HeaderHubSpotRequestTimestamp)
	const v1 = "232db2615f3d666fe21a8ec971ac7b5402d33b9a925784df3ca654d05f4817de"
	for _, tc := range []struct {
		name    string
		headers []string
		want    error
	}{
		{"no signature at all", nil, verify.ErrMissing},
		{"v3 without timestamp", []string{verify.HeaderHubSpotSignatureV3, sig}, verify.ErrMissing},
		{"v3 empty", []string{verify.HeaderHubSpotSignatureV3, "", verify.HeaderHubSpotRequestTimestamp, ts}, verify.ErrMissing},
		{"timestamp in seconds is stale", []string{verify.HeaderHubSpotSignatureV3, sig, verify.HeaderHubSpotRequestTimestamp, ts[:10]}, verify.ErrStale},
		{"timestamp not a number", []string{verify.HeaderHubSpotSignatureV3, sig, verify.HeaderHubSpotRequestTimestamp, "1.7e12"}, verify.ErrMalformed},
		{"v3 not base64", []string{verify.HeaderHubSpotSignatureV3, "%%%", verify.HeaderHubSpotRequestTimestamp, ts}, verify.ErrMalformed},
		{"v3 hex", []string{verify.HeaderHubSpotSignatureV3, v1, verify.HeaderHubSpotRequestTimestamp, ts}, verify.ErrMalformed},
		{"v3 decides even with a version header", []string{
			verify.HeaderHubSpotSignatureV3, "Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=", verify.HeaderHubSpotRequestTimestamp, ts,
			verify.HeaderHubSpotSignatureVersion, "v1", verify.HeaderHubSpotSignature, v1,
		}, verify.ErrMismatch},
		{"unknown version", []string{verify.HeaderHubSpotSignatureVersion, "v4", verify.HeaderHubSpotSignature, v1}, verify.ErrMalformed},
		{"version without signature", []string{verify.HeaderHubSpotSignatureVersion, "v1"}, verify.ErrMissing},
		{"v1 not hex", []string{verify.HeaderHubSpotSignatureVersion, "v1", verify.HeaderHubSpotSignature, "xyz"}, verify.ErrMalformed},
		{"v1 wrong", []string{verify.HeaderHubSpotSignatureVersion, "v1", verify.HeaderHubSpotSignature, v1}, verify.ErrMismatch},
	} {
		r := hubSpotRequest(http.MethodPost, "https://hooks.example.com/in/hubspot", tc.headers...)
		err := v.Verify(r, body)
		if !knownErr(err) {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		wantErr(t, err, tc.want, "hubspot", hubSpotSecret, sig)
	}
}
