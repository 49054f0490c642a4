package source

import (
	"strings"
	"testing"
)

// BenchmarkEvents measures splitting and keying one request of each shape:
// header-keyed (no body parse), one JSON event, a HubSpot batch of three, a
// Salesforce message of three.
func BenchmarkEvents(b *testing.B) {
	cases := []struct {
		name     string
		provider string
		body     []byte
		headers  []string
	}{
		{"github-header", "github", fixture(b, "stripe-event.json"), []string{"X-GitHub-Delivery: d-1", "X-GitHub-Event: push"}},
		{"stripe-json", "stripe", fixture(b, "stripe-event.json"), nil},
		{"hubspot-batch3", "hubspot", fixture(b, "hubspot-batch.json"), nil},
		{"salesforce-soap3", "salesforce", fixture(b, "salesforce-three.xml"), nil},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s := newTestSource(b, presetConfig(c.provider))
			r := newRequest("/in/x", c.body, c.headers...)
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Events(r, c.body, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// tinyElements returns an outbound message of testOrg, about 1 MiB, whose
// one sObject holds nothing but empty elements: the cheapest body that makes
// an XML parser allocate per element. Its organization is right, so without
// a token it passes authentication.
func tinyElements() []byte {
	const head = `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>` +
		`<notifications xmlns="http://soap.sforce.com/2005/09/outbound"><OrganizationId>` + testOrg + `</OrganizationId>` +
		`<Notification><Id>04l5e00000AbC1AAAV</Id><sObject>`
	const tail = `</sObject></Notification></notifications></soapenv:Body></soapenv:Envelope>`
	return []byte(head + strings.Repeat("<a/>", (1<<20-len(head)-len(tail))/4) + tail)
}

// BenchmarkSalesforceTinyElements measures what intake spends on a hostile
// Salesforce message before it is refused: authentication, then splitting.
func BenchmarkSalesforceTinyElements(b *testing.B) {
	s := newTestSource(b, presetConfig("salesforce"))
	body := tinyElements()
	r := newRequest("/in/sf", body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Authenticate(r, body); err != nil {
			continue
		}
		s.Events(r, body, "")
	}
}
