package verify_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/verify"
)

// jsonBody returns a JSON object of exactly n bytes.
func jsonBody(n int) []byte {
	const head, tail = `{"id":"evt_1","data":"`, `"}`
	return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
}

// outboundBody returns an outbound message of exactly n bytes: the fixture
// with its Notification repeated, then padded with whitespace.
func outboundBody(b *testing.B, n int) []byte {
	fixture := salesforceFixture(b)
	start := bytes.Index(fixture, []byte("   <Notification>"))
	end := bytes.LastIndex(fixture, []byte("  </notifications>"))
	head, notes, tail := fixture[:start], fixture[start:end], fixture[end:]
	body := bytes.Clone(head)
	for len(body)+len(notes)+len(tail) <= n {
		body = append(body, notes...)
	}
	body = append(body, bytes.Repeat([]byte(" "), n-len(body)-len(tail))...)
	return append(body, tail...)
}

func BenchmarkVerify(b *testing.B) {
	for _, sc := range schemeCases(b) {
		name := sc.name
		if sc.header == "" && sc.name == "shippo" {
			name = "shippo-token"
		}
		v, err := sc.newFn(sc.secret, verify.WithClock(clockAt(epoch)))
		if err != nil {
			b.Fatal(err)
		}
		for _, size := range []struct {
			name string
			n    int
		}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}} {
			body := jsonBody(size.n)
			if sc.name == "salesforce" {
				body = outboundBody(b, size.n)
			}
			if len(body) != size.n {
				b.Fatalf("%s body is %d bytes", name, len(body))
			}
			r := post("https://hooks.example.com/in/" + sc.name + "?tenant=acme")
			if err := v.Sign(r, body); err != nil {
				b.Fatal(err)
			}
			b.Run(name+"/"+size.name, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if err := v.Verify(r, body); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
