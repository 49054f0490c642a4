package verify_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// The Standard Webhooks reference library's signing vector
// (standard-webhooks/standard-webhooks, libraries/go/webhook_test.go,
// TestWebhookSign); reproduced with
// `openssl dgst -sha256 -mac HMAC -macopt hexkey:<base64-decoded key> -binary | base64`.
const (
	stdSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	stdMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	stdTimestamp = "1614265330"
	stdPayload   = `{"test": 2432232314}`
	stdSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	// stdOther is a well-formed v1 signature that does not match.
	stdOther = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
)

var stdTime = time.Unix(1614265330, 0)

func stdRequest(sig string) *http.Request {
	r := post("https://hooks.example.com/in/standard")
	r.Header.Set(verify.HeaderWebhookID, stdMsgID)
	r.Header.Set(verify.HeaderWebhookTimestamp, stdTimestamp)
	r.Header.Set(verify.HeaderWebhookSignature, sig)
	return r
}

func TestStandardKnownAnswer(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{stdSecret, strings.TrimPrefix(stdSecret, "whsec_")} {
		v, err := verify.NewStandard(secret, verify.WithClock(clockAt(stdTime)))
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Verify(stdRequest(stdSignature), []byte(stdPayload)); err != nil {
			t.Errorf("secret %q: %v", secret, err)
		}
		r := stdRequest("")
		r.Header.Del(verify.HeaderWebhookSignature)
		if err := v.Sign(r, []byte(stdPayload)); err != nil {
			t.Fatal(err)
		}
		if got := r.Header.Get(verify.HeaderWebhookSignature); got != stdSignature {
			t.Errorf("Sign: signature %q, want %q", got, stdSignature)
		}
		if got := r.Header.Get(verify.HeaderWebhookID); got != stdMsgID {
			t.Errorf("Sign replaced webhook-id: %q", got)
		}
	}
}

func TestStandardSignatureList(t *testing.T) {
	t.Parallel()
	v, err := verify.NewStandard(stdSecret, verify.WithClock(clockAt(stdTime)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, sig string
		want      error
	}{
		{"several, one valid", strings.Join([]string{stdOther, "v2," + stdSignature[3:], stdSignature, stdOther}, " "), nil},
		{"unknown versions are ignored", "v1a,abc " + stdSignature, nil},
		{"undecodable v1 is ignored", "v1,!!! " + stdSignature, nil},
		{"extra spaces", "  " + stdSignature + "   " + stdOther, nil},
		{"only other versions", "v2," + stdSignature[3:], verify.ErrMismatch},
		{"only undecodable v1", "v1,not-base64", verify.ErrMismatch},
		{"wrong v1", stdOther, verify.ErrMismatch},
		{"entry without a comma", stdSignature + " v1", verify.ErrMalformed},
		{"bare signature", stdSignature[3:], verify.ErrMalformed},
	} {
		err := v.Verify(stdRequest(tc.sig), []byte(stdPayload))
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !knownErr(err) {
			t.Errorf("%s: unexpected error %v", tc.name, err)
		}
		wantErr(t, err, tc.want, "standard", stdSecret, stdSignature)
	}
}

func TestStandardHeaders(t *testing.T) {
	t.Parallel()
	v, err := verify.NewStandard(stdSecret, verify.WithClock(clockAt(stdTime)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		modify func(http.Header)
		want   error
	}{
		{"no id", func(h http.Header) { h.Del(verify.HeaderWebhookID) }, verify.ErrMissing},
		{"no timestamp", func(h http.Header) { h.Del(verify.HeaderWebhookTimestamp) }, verify.ErrMissing},
		{"empty signature", func(h http.Header) { h.Set(verify.HeaderWebhookSignature, " ") }, verify.ErrMissing},
		{"timestamp not a number", func(h http.Header) { h.Set(verify.HeaderWebhookTimestamp, "2021-02-25") }, verify.ErrMalformed},
		{"negative timestamp", func(h http.Header) { h.Set(verify.HeaderWebhookTimestamp, "-1614265330") }, verify.ErrMalformed},
		{"timestamp too long", func(h http.Header) { h.Set(verify.HeaderWebhookTimestamp, strings.Repeat("9", 40)) }, verify.ErrMalformed},
		{"signature sent twice", func(h http.Header) { h.Add(verify.HeaderWebhookSignature, stdSignature) }, verify.ErrMalformed},
		{"stale", func(h http.Header) { h.Set(verify.HeaderWebhookTimestamp, "1614264000") }, verify.ErrStale},
		{"other id", func(h http.Header) { h.Set(verify.HeaderWebhookID, "msg_other") }, verify.ErrMismatch},
	} {
		r := stdRequest(stdSignature)
		tc.modify(r.Header)
		wantErr(t, v.Verify(r, []byte(stdPayload)), tc.want, "standard", stdSecret)
	}
}

func TestStandardConfig(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{"", "whsec_", "whsec_!!!not base64!!!", "not base64 either"} {
		_, err := verify.NewStandard(secret)
		wantErr(t, err, verify.ErrConfig, "standard", secret)
	}
}

func TestStandardSignFreshID(t *testing.T) {
	t.Parallel()
	v, err := verify.NewStandard(stdSecret, verify.WithClock(clockAt(stdTime)))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for range 3 {
		r := post("https://hooks.example.com/")
		if err := v.Sign(r, []byte(stdPayload)); err != nil {
			t.Fatal(err)
		}
		id := r.Header.Get(verify.HeaderWebhookID)
		if !strings.HasPrefix(id, "msg_") || len(id) != len("msg_")+26 {
			t.Fatalf("webhook-id %q, want msg_ and 26 characters", id)
		}
		if got := r.Header.Get(verify.HeaderWebhookTimestamp); got != stdTimestamp {
			t.Fatalf("webhook-timestamp %q, want the clock's %q", got, stdTimestamp)
		}
		ids[id] = true
		if err := v.Verify(r, []byte(stdPayload)); err != nil {
			t.Fatal(err)
		}
	}
	if len(ids) != 3 {
		t.Fatalf("Sign reused ids: %v", ids)
	}
	var bare http.Request
	bare.URL = post("https://hooks.example.com/").URL
	if err := v.Sign(&bare, []byte(stdPayload)); err != nil || bare.Header.Get(verify.HeaderWebhookSignature) == "" {
		t.Fatalf("Sign on a request without a header map: %v", err)
	}
}
