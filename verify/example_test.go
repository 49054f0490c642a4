package verify_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/hookgate/hookgate/verify"
)

func ExampleStripe() {
	// A fixed clock makes the example's output stable; omit WithClock in
	// production.
	now := time.Unix(1492774577, 0)
	v, err := verify.NewStripe("whsec_test_secret", verify.WithClock(func() time.Time { return now }))
	if err != nil {
		panic(err)
	}
	body := []byte(`{"id":"evt_test_webhook","object":"event"}`)

	r := httptest.NewRequest(http.MethodPost, "/in/stripe", nil)
	if err := v.Sign(r, body); err != nil {
		panic(err)
	}
	fmt.Println(r.Header.Get("Stripe-Signature"))
	fmt.Println(v.Verify(r, body))

	err = v.Verify(r, []byte(`{"id":"evt_forged","object":"event"}`))
	fmt.Println(err, errors.Is(err, verify.ErrMismatch))
	// Output:
	// t=1492774577,v1=88a022085c6bdb887b02cb26ff76dd681234d9675c0f22844059f55552a8883a
	// <nil>
	// verify stripe: signature: no match true
}

func ExampleStandard_Sign() {
	now := time.Unix(1614265330, 0)
	s, err := verify.NewStandard("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", verify.WithClock(func() time.Time { return now }))
	if err != nil {
		panic(err)
	}
	// An outgoing delivery keeps its webhook-id across retries.
	r, err := http.NewRequest(http.MethodPost, "https://app.example.com/hooks", nil)
	if err != nil {
		panic(err)
	}
	r.Header.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	if err := s.Sign(r, []byte(`{"test": 2432232314}`)); err != nil {
		panic(err)
	}
	fmt.Println(r.Header.Get("webhook-timestamp"))
	fmt.Println(r.Header.Get("webhook-signature"))
	// Output:
	// 1614265330
	// v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}

func ExampleNewHMAC() {
	v, err := verify.NewHMAC("Jefe", verify.HMACConfig{Header: "X-Signature", Algorithm: "sha256", Encoding: "hex", Prefix: "sha256="})
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/in/custom", nil)
	r.Header.Set("X-Signature", "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
	fmt.Println(v.Verify(r, []byte("what do ya want for nothing?")))
	r.Header.Del("X-Signature")
	fmt.Println(v.Verify(r, []byte("what do ya want for nothing?")))
	// Output:
	// <nil>
	// verify hmac: header X-Signature: missing
}
