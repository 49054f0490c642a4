package verify_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// Shippo publishes no vector; computed by hand with
// `printf '%s' '1700000000.<body>' | openssl dgst -sha256 -hmac shippo_test_secret`.
const (
	shippoSecret = "shippo_test_secret"
	shippoToken  = "tok_7f3a9c"
	shippoBody   = `{"event":"track_updated","test":true}`
	shippoSig    = "t=1700000000,v1=06d5706c6529b83341116c8d3693fd16911ccb5a00885e1c4fd11940fbe7305f"
	shippoWrong  = "t=1700000000,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"
)

var shippoTime = time.Unix(1700000000, 0)

func TestShippo(t *testing.T) {
	t.Parallel()
	secretOnly, err := verify.NewShippo(shippoSecret, "", verify.WithClock(clockAt(shippoTime)))
	if err != nil {
		t.Fatal(err)
	}
	tokenOnly, err := verify.NewShippo("", shippoToken, verify.WithClock(clockAt(shippoTime)))
	if err != nil {
		t.Fatal(err)
	}
	both, err := verify.NewShippo(shippoSecret, shippoToken, verify.WithClock(clockAt(shippoTime)))
	if err != nil {
		t.Fatal(err)
	}
	req := func(query, sig string) *http.Request {
		r := post("https://hooks.example.com/in/shippo" + query)
		if sig != "" {
			r.Header.Set(verify.HeaderShippoSignature, sig)
		}
		return r
	}
	for _, tc := range []struct {
		name  string
		v     verify.Verifier
		query string
		sig   string
		want  error
	}{
		{"secret: hand-computed vector", secretOnly, "", shippoSig, nil},
		{"secret: wrong signature", secretOnly, "", shippoWrong, verify.ErrMismatch},
		{"secret: a token is no substitute", secretOnly, "?token=" + shippoToken, "", verify.ErrMissing},
		{"secret: malformed", secretOnly, "", "1700000000," + shippoSig[13:], verify.ErrMalformed},
		{"secret: stale", secretOnly, "", "t=1699999000" + shippoSig[12:], verify.ErrStale},
		{"token: matches", tokenOnly, "?token=" + shippoToken, "", nil},
		{"token: a signature header is not consulted", tokenOnly, "?token=" + shippoToken, shippoWrong, nil},
		{"token: wrong", tokenOnly, "?token=tok_7f3a9d", "", verify.ErrMismatch},
		{"token: prefix of the token", tokenOnly, "?token=tok_7f3a9", "", verify.ErrMismatch},
		{"token: missing", tokenOnly, "?other=1", "", verify.ErrMissing},
		{"token: empty", tokenOnly, "?token=", "", verify.ErrMissing},
		{"token: sent twice", tokenOnly, "?token=" + shippoToken + "&token=" + shippoToken, "", verify.ErrMalformed},
		{"both: signature present and valid", both, "", shippoSig, nil},
		{"both: signature present and wrong, token right", both, "?token=" + shippoToken, shippoWrong, verify.ErrMismatch},
		{"both: no signature, token right", both, "?token=" + shippoToken, "", nil},
		{"both: no signature, token wrong", both, "?token=nope", "", verify.ErrMismatch},
		{"both: neither", both, "", "", verify.ErrMissing},
	} {
		err := tc.v.Verify(req(tc.query, tc.sig), []byte(shippoBody))
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !knownErr(err) {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		wantErr(t, err, tc.want, "shippo", shippoSecret, shippoToken, shippoSig)
	}
}

func TestShippoSign(t *testing.T) {
	t.Parallel()
	both, err := verify.NewShippo(shippoSecret, shippoToken, verify.WithClock(clockAt(shippoTime)))
	if err != nil {
		t.Fatal(err)
	}
	r := post("https://hooks.example.com/in/shippo?tenant=acme&token=old")
	if err := both.Sign(r, []byte(shippoBody)); err != nil {
		t.Fatal(err)
	}
	if got := r.Header.Get(verify.HeaderShippoSignature); got != shippoSig {
		t.Errorf("signature %q, want %q", got, shippoSig)
	}
	if q := r.URL.Query(); q.Get("token") != shippoToken || q.Get("tenant") != "acme" || len(q["token"]) != 1 {
		t.Errorf("query %q", r.URL.RawQuery)
	}
	_, err = verify.NewShippo("", "")
	wantErr(t, err, verify.ErrConfig, "shippo")
}
