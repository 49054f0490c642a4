package verify_test

import (
	"bytes"
	"net/url"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/verify"
)

// The fuzz targets feed arbitrary header values (and Salesforce bodies) to
// the parsers. None may panic; every rejection must be a known *Error that
// does not repeat the secret; and an acceptance must carry the one valid
// signature.

func checkFuzzErr(t *testing.T, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		return
	}
	if !knownErr(err) {
		t.Fatalf("unexpected error %T %v", err, err)
	}
	noSecrets(t, err, secrets...)
}

func FuzzStandardSignature(f *testing.F) {
	v, err := verify.NewStandard(stdSecret, verify.WithClock(clockAt(stdTime)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(stdMsgID, stdTimestamp, stdSignature)
	f.Add(stdMsgID, stdTimestamp, stdOther+" v2,x "+stdSignature)
	f.Add(stdMsgID, "99999999999999999999", "v1,")
	f.Add("", "", ",")
	f.Add("msg_x", "1614265330", "v1a,abc v1,=== v1")
	f.Fuzz(func(t *testing.T, id, ts, sig string) {
		r := post("https://hooks.example.com/in/standard")
		r.Header.Set(verify.HeaderWebhookID, id)
		r.Header.Set(verify.HeaderWebhookTimestamp, ts)
		r.Header.Set(verify.HeaderWebhookSignature, sig)
		err := v.Verify(r, []byte(stdPayload))
		checkFuzzErr(t, err, stdSecret, strings.TrimPrefix(stdSecret, "whsec_"))
		if err == nil && (strings.TrimSpace(id) != stdMsgID || strings.TrimSpace(ts) != stdTimestamp || !strings.Contains(sig, stdSignature)) {
			t.Fatalf("accepted id %q ts %q sig %q", id, ts, sig)
		}
	})
}

func fuzzTV1(f *testing.F, scheme string, v verify.Verifier, header, secret, body, valid string) {
	f.Add(valid)
	f.Add("t=1,v1=" + valid[len(valid)-64:] + ",v1=zz,v0=")
	f.Add("v1,t=1")
	f.Add("t=,t=,=,,")
	f.Add(strings.Repeat("v1=00,", 50) + "t=" + strings.Repeat("9", 30))
	f.Fuzz(func(t *testing.T, h string) {
		r := post("https://hooks.example.com/in/" + scheme)
		r.Header.Set(header, h)
		err := v.Verify(r, []byte(body))
		checkFuzzErr(t, err, secret)
		if err == nil && !strings.Contains(h, valid[strings.Index(valid, "v1="):]) {
			t.Fatalf("accepted %q", h)
		}
	})
}

func FuzzStripeSignature(f *testing.F) {
	v, err := verify.NewStripe(stripeSecret, verify.WithClock(clockAt(stripeTime)))
	if err != nil {
		f.Fatal(err)
	}
	fuzzTV1(f, "stripe", v, verify.HeaderStripeSignature, stripeSecret, stripeBody, "t=1492774577,v1="+stripeV1)
}

func FuzzShippoSignature(f *testing.F) {
	v, err := verify.NewShippo(shippoSecret, "", verify.WithClock(clockAt(shippoTime)))
	if err != nil {
		f.Fatal(err)
	}
	fuzzTV1(f, "shippo", v, verify.HeaderShippoSignature, shippoSecret, shippoBody, shippoSig)
}

func FuzzHubSpotHeaders(f *testing.F) {
	const body = `[{"eventId":1}]`
	v, err := verify.NewHubSpot(hubSpotSecret, verify.WithClock(clockAt(epoch)))
	if err != nil {
		f.Fatal(err)
	}
	signed := post("https://hooks.example.com/in/hubspot?a=%3A%2f%20")
	if err := v.Sign(signed, []byte(body)); err != nil {
		f.Fatal(err)
	}
	sig := signed.Header.Get(verify.HeaderHubSpotSignatureV3)
	ts := signed.Header.Get(verify.HeaderHubSpotRequestTimestamp)
	f.Add(sig, ts, "", "", "a=%3A%2f%20", "")
	f.Add("", "", "v1", "232db2615f3d666fe21a8ec971ac7b5402d33b9a925784df3ca654d05f4817de", "", "")
	f.Add("", "", "v2", "zz", "%%3A%3", "https, http")
	f.Add("===", "1714564800000", "v3", "", "x=%2", "ftp")
	f.Fuzz(func(t *testing.T, v3, ts, version, legacy, query, xfp string) {
		r := post("https://hooks.example.com/in/hubspot")
		r.URL.RawQuery = query
		for name, value := range map[string]string{
			verify.HeaderHubSpotSignatureV3:      v3,
			verify.HeaderHubSpotRequestTimestamp: ts,
			verify.HeaderHubSpotSignatureVersion: version,
			verify.HeaderHubSpotSignature:        legacy,
			"X-Forwarded-Proto":                  xfp,
		} {
			if value != "" {
				r.Header.Set(name, value)
			}
		}
		err := v.Verify(r, []byte(body))
		checkFuzzErr(t, err, hubSpotSecret)
		if err == nil && v3 != "" && strings.TrimSpace(v3) != sig {
			t.Fatalf("accepted v3 %q", v3)
		}
	})
}

func FuzzSalesforceBody(f *testing.F) {
	v, err := verify.NewSalesforce(sfOrg15, "")
	if err != nil {
		f.Fatal(err)
	}
	fixture := salesforceFixture(f)
	f.Add(fixture)
	f.Add(fixture[:len(fixture)/3])
	f.Add([]byte(`<!DOCTYPE x [<!ENTITY e "e">]><x>&e;</x>`))
	f.Add([]byte(`<a:Envelope xmlns:a="http://schemas.xmlsoap.org/soap/envelope/"><a:Body><notifications xmlns="http://soap.sforce.com/2005/09/outbound"><OrganizationId><![CDATA[00D000000000062]]></OrganizationId></notifications></a:Body></a:Envelope>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkFuzzErr(t, v.Verify(post("https://hooks.example.com/in/salesforce"), body))
	})
}

func FuzzHMACHeader(f *testing.F) {
	hexV, err := verify.NewHMAC("Jefe", verify.HMACConfig{Header: "X-Sig", Algorithm: "sha256", Encoding: "hex", Prefix: "sha256="})
	if err != nil {
		f.Fatal(err)
	}
	b64V, err := verify.NewHMAC("Jefe", verify.HMACConfig{Header: "X-Sig", Algorithm: "sha512", Encoding: "base64"})
	if err != nil {
		f.Fatal(err)
	}
	const (
		data   = "what do ya want for nothing?"
		hexSig = "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
		b64Sig = "Fkt6e/z4GeLjlfvnO1bgo4e9ZCIugx/WECcM1+olBVSXWL91wFqZSm0DT2X48Ob9yuqxo01Ka0tjbgcKOLznNw=="
	)
	f.Add(hexSig, false)
	f.Add(b64Sig, true)
	f.Add("sha256=", false)
	f.Add("====", true)
	f.Fuzz(func(t *testing.T, h string, base64 bool) {
		v, valid := verify.Verifier(hexV), hexSig
		if base64 {
			v, valid = b64V, b64Sig
		}
		err := v.Verify(withHeader("X-Sig", h), []byte(data))
		checkFuzzErr(t, err, "Jefe")
		if err == nil && !sameSignature(strings.TrimSpace(h), valid, base64) {
			t.Fatalf("accepted %q", h)
		}
	})
}

// sameSignature reports whether got encodes the same MAC as valid: hex
// digits in either case (hex decoding, like every hex verifier's, reads
// both, and both encode the same MAC, so an upper-case copy proves as much
// as the lower-case one), base64 byte for byte (its letters' case is
// data). The prefix is matched exactly.
func sameSignature(got, valid string, base64 bool) bool {
	if base64 {
		return got == valid
	}
	const prefix = "sha256="
	rest, ok := strings.CutPrefix(got, prefix)
	return ok && strings.EqualFold(rest, valid[len(prefix):])
}

// FuzzSignedDigest checks that the Standard Webhooks digest tells signed
// contents apart however their bytes are split between id, timestamp and
// body (the parts are length-prefixed), and that it ignores what the
// signature does not cover.
func FuzzSignedDigest(f *testing.F) {
	v, err := verify.NewStandard(stdSecret)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("msg_1", "1614265330", []byte(`{"a":1}`), "msg_1", "1614265330", []byte(`{"a":1}`))
	f.Add("msg_1", "1614265330", []byte(`{"a":1}`), "msg_11", "614265330", []byte(`{"a":1}`))
	f.Add("a", "b", []byte("c"), "", "ab", []byte("c"))
	f.Add("a.b", "c", []byte{}, "a", "b.c", []byte{})
	f.Fuzz(func(t *testing.T, id1, ts1 string, body1 []byte, id2, ts2 string, body2 []byte) {
		digest := func(id, ts string, body []byte, unsigned string) ([32]byte, [2]string) {
			r := post("https://hooks.example.com/in/standard/" + url.PathEscape(unsigned))
			r.Header.Set(verify.HeaderWebhookID, id)
			r.Header.Set(verify.HeaderWebhookTimestamp, ts)
			r.Header.Set("X-Unsigned", unsigned)
			// Verify reads the headers trimmed; so does the digest.
			return v.SignedDigest(r, body), [2]string{strings.TrimSpace(id), strings.TrimSpace(ts)}
		}
		d1, h1 := digest(id1, ts1, body1, "one")
		d2, h2 := digest(id2, ts2, body2, "two")
		same := h1 == h2 && bytes.Equal(body1, body2)
		if (d1 == d2) != same {
			t.Fatalf("digest(%q, %q, %q) == digest(%q, %q, %q) is %v, want %v",
				id1, ts1, body1, id2, ts2, body2, d1 == d2, same)
		}
	})
}
