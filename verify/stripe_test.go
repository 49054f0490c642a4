package verify_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// Stripe publishes no fixed vector; this one was computed by hand with
// `printf '%s' '1492774577.<body>' | openssl dgst -sha256 -hmac whsec_test_secret`
// (the secret is stripe-go's test secret, the timestamp the one in Stripe's
// documentation examples).
const (
	stripeSecret = "whsec_test_secret"
	stripeBody   = `{"id":"evt_test_webhook","object":"event"}`
	stripeV1     = "88a022085c6bdb887b02cb26ff76dd681234d9675c0f22844059f55552a8883a"
	stripeWrong  = "5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"
)

var stripeTime = time.Unix(1492774577, 0)

func stripeRequest(h string) *http.Request {
	r := post("https://hooks.example.com/in/stripe")
	r.Header.Set(verify.HeaderStripeSignature, h)
	return r
}

func TestStripeKnownAnswer(t *testing.T) {
	t.Parallel()
	v, err := verify.NewStripe(stripeSecret, verify.WithClock(clockAt(stripeTime)))
	if err != nil {
		t.Fatal(err)
	}
	want := "t=1492774577,v1=" + stripeV1
	if err := v.Verify(stripeRequest(want), []byte(stripeBody)); err != nil {
		t.Fatal(err)
	}
	r := post("https://hooks.example.com/in/stripe")
	if err := v.Sign(r, []byte(stripeBody)); err != nil {
		t.Fatal(err)
	}
	if got := r.Header.Get(verify.HeaderStripeSignature); got != want {
		t.Fatalf("Sign: %q, want %q", got, want)
	}
}

func TestStripeHeader(t *testing.T) {
	t.Parallel()
	v, err := verify.NewStripe(stripeSecret, verify.WithClock(clockAt(stripeTime)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, header string
		want         error
	}{
		{"rotation: second v1 matches", "t=1492774577,v1=" + stripeWrong + ",v1=" + stripeV1, nil},
		{"v0 and unknown schemes ignored", "t=1492774577,v0=" + stripeWrong + ",v1=" + stripeV1 + ",v9=x", nil},
		{"unreadable v1 ignored", "t=1492774577,v1=bad_signature,v1=" + stripeV1, nil},
		{"order does not matter", "v1=" + stripeV1 + ",t=1492774577", nil},
		{"spaces around items", "t=1492774577, v1=" + stripeV1, nil},
		{"only v0", "t=1492774577,v0=" + stripeV1, verify.ErrMismatch},
		{"no signature at all", "t=1492774577", verify.ErrMismatch},
		{"wrong v1", "t=1492774577,v1=" + stripeWrong, verify.ErrMismatch},
		{"short v1", "t=1492774577,v1=" + stripeV1[:62], verify.ErrMismatch},
		{"signed at another time", "t=1492774578,v1=" + stripeV1, verify.ErrMismatch},
		{"stripe-go's bad header", "v1,t=1", verify.ErrMalformed},
		{"empty t", "t=,v1=" + stripeV1, verify.ErrMalformed},
		{"no t", "v1=" + stripeV1, verify.ErrMalformed},
		{"two t", "t=1492774577,t=1492774577,v1=" + stripeV1, verify.ErrMalformed},
		{"t with a sign", "t=+1492774577,v1=" + stripeV1, verify.ErrMalformed},
		{"t in milliseconds is stale", "t=1492774577000,v1=" + stripeV1, verify.ErrStale},
		{"stale", "t=1492774000,v1=" + stripeV1, verify.ErrStale},
		{"future", "t=1492775000,v1=" + stripeV1, verify.ErrStale},
	} {
		err := v.Verify(stripeRequest(tc.header), []byte(stripeBody))
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !knownErr(err) {
			t.Errorf("%s: %v", tc.name, err)
		}
		wantErr(t, err, tc.want, "stripe", stripeSecret, stripeV1)
	}
}

func TestStripeErrorMessage(t *testing.T) {
	t.Parallel()
	v, err := verify.NewStripe(stripeSecret)
	if err != nil {
		t.Fatal(err)
	}
	err = v.Verify(post("https://hooks.example.com/"), []byte(stripeBody))
	if got, want := err.Error(), "verify stripe: header Stripe-Signature: missing"; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
}
