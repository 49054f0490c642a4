package source

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/config"
)

// TestEventsErrors walks every way a body or request can be refused. Each
// must be a *RequestError wrapping the right sentinel and naming the event,
// the part and the selector.
func TestEventsErrors(t *testing.T) {
	t.Parallel()
	hubspotEvent := `{"eventId":1,"subscriptionId":2,"portalId":3,"occurredAt":4,"objectId":5,"subscriptionType":"deal.creation"}`
	soap := func(notifications string) string {
		return `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>` +
			`<notifications xmlns="http://soap.sforce.com/2005/09/outbound"><OrganizationId>` + testOrg + `</OrganizationId>` +
			notifications + `</notifications></soapenv:Body></soapenv:Envelope>`
	}
	note := `<Notification><Id>n1</Id><sObject><Id>x</Id></sObject></Notification>`
	pathCfg := presetConfig("standard")
	pathCfg.Tenant = "path"
	hmacCfg := presetConfig("hmac")
	hmacCfg.Key = []string{"header:X-Event-Id", "query:seq"}

	tests := []struct {
		name       string
		cfg        config.Source
		body       string
		url        string
		headers    []string
		pathTenant string
		is         error
		index      int
		part       string
		selector   string
	}{
		{name: "stripe not json", cfg: presetConfig("stripe"), body: `{"id":`,
			is: ErrMalformed, index: -1, part: "body"},
		{name: "stripe empty body", cfg: presetConfig("stripe"), body: ``,
			is: ErrMalformed, index: -1, part: "body"},
		{name: "stripe nested too deep", cfg: presetConfig("stripe"), body: strings.Repeat("[", 600) + strings.Repeat("]", 600),
			is: ErrMalformed, index: -1, part: "body"},
		{name: "stripe id missing", cfg: presetConfig("stripe"), body: `{"type":"charge.succeeded"}`,
			is: ErrMissing, index: 0, part: "event id", selector: "json:id"},
		{name: "stripe id empty", cfg: presetConfig("stripe"), body: `{"id":""}`,
			is: ErrMissing, index: 0, part: "event id", selector: "json:id"},
		{name: "stripe id null", cfg: presetConfig("stripe"), body: `{"id":null}`,
			is: ErrMissing, index: 0, part: "event id", selector: "json:id"},
		{name: "stripe id an object", cfg: presetConfig("stripe"), body: `{"id":{"v":1}}`,
			is: ErrNotScalar, index: 0, part: "event id", selector: "json:id"},
		{name: "shippo status date missing", cfg: presetConfig("shippo"),
			body: `{"event":"track_updated","data":{"carrier":"usps","tracking_number":"1","tracking_status":{"status":"TRANSIT"}}}`,
			is:   ErrMissing, index: 0, part: "event id", selector: "json:data.tracking_status.status_date"},
		{name: "hubspot not an array", cfg: presetConfig("hubspot"), body: hubspotEvent,
			is: ErrMalformed, index: -1, part: "body"},
		{name: "hubspot empty array", cfg: presetConfig("hubspot"), body: `[]`,
			is: ErrBatchSize, index: -1, part: "body"},
		{name: "hubspot 101 events", cfg: presetConfig("hubspot"), body: "[" + strings.Repeat(hubspotEvent+",", 100) + hubspotEvent + "]",
			is: ErrBatchSize, index: -1, part: "body"},
		{name: "hubspot element not an object", cfg: presetConfig("hubspot"), body: "[" + hubspotEvent + ",7]",
			is: ErrMalformed, index: 1, part: "body"},
		{name: "hubspot event id part missing", cfg: presetConfig("hubspot"),
			body: "[" + hubspotEvent + "," + strings.Replace(hubspotEvent, `"eventId":1,`, "", 1) + "]",
			is:   ErrMissing, index: 1, part: "event id", selector: "json:eventId"},
		{name: "hubspot portal missing", cfg: presetConfig("hubspot"),
			body: "[" + strings.Replace(hubspotEvent, `"portalId":3,`, "", 1) + "]",
			is:   ErrMissing, index: 0, part: "tenant", selector: "json:portalId"},
		{name: "salesforce not xml", cfg: presetConfig("salesforce"), body: `{"id":1}`,
			is: ErrMalformed, index: -1, part: "body"},
		{name: "salesforce truncated", cfg: presetConfig("salesforce"), body: soap(note)[:120],
			is: ErrMalformed, index: -1, part: "body"},
		{name: "salesforce doctype", cfg: presetConfig("salesforce"), body: `<!DOCTYPE x [<!ENTITY a "b">]>` + soap(note),
			is: ErrMalformed, index: -1, part: "body"},
		{name: "salesforce two roots", cfg: presetConfig("salesforce"), body: soap(note) + soap(note),
			is: ErrMalformed, index: -1, part: "body"},
		{name: "salesforce too deep", cfg: presetConfig("salesforce"), body: strings.Repeat("<a>", 65) + strings.Repeat("</a>", 65),
			is: ErrMalformed, index: -1, part: "body"},
		{name: "salesforce not an envelope", cfg: presetConfig("salesforce"), body: `<notifications><Notification/></notifications>`,
			is: ErrMalformed, index: -1, part: "body"},
		{name: "salesforce body in the wrong namespace", cfg: presetConfig("salesforce"),
			body: strings.Replace(soap(note), "http://soap.sforce.com/2005/09/outbound", "urn:other", 1),
			is:   ErrMalformed, index: -1, part: "body"},
		{name: "salesforce no notifications", cfg: presetConfig("salesforce"), body: soap(""),
			is: ErrBatchSize, index: -1, part: "body"},
		{name: "salesforce 101 notifications", cfg: presetConfig("salesforce"), body: soap(strings.Repeat(note, 101)),
			is: ErrBatchSize, index: -1, part: "body"},
		{name: "salesforce notification without id", cfg: presetConfig("salesforce"),
			body: soap(note + `<Notification><sObject><Id>x</Id></sObject></Notification>`),
			is:   ErrMissing, index: 1, part: "event id", selector: "xml:Id"},
		{name: "salesforce organization missing", cfg: presetConfig("salesforce"),
			body: strings.Replace(soap(note), "<OrganizationId>"+testOrg+"</OrganizationId>", "", 1),
			is:   ErrMissing, index: 0, part: "tenant", selector: "xml:/Envelope/Body/notifications/OrganizationId (18-character form)"},
		{name: "github delivery header missing", cfg: presetConfig("github"), body: `{}`,
			headers: []string{"X-GitHub-Event: push"},
			is:      ErrMissing, index: 0, part: "event id", selector: "header:X-GitHub-Delivery"},
		{name: "standard webhook-id missing", cfg: presetConfig("standard"), body: `{}`,
			is: ErrMissing, index: 0, part: "event id", selector: "header:webhook-id"},
		{name: "shopify shop domain missing", cfg: presetConfig("shopify"), body: `{"id":1}`,
			headers: []string{"X-Shopify-Webhook-Id: w"},
			is:      ErrMissing, index: 0, part: "tenant", selector: "header:X-Shopify-Shop-Domain"},
		{name: "shopify body not json", cfg: presetConfig("shopify"), body: `<order/>`,
			headers: []string{"X-Shopify-Webhook-Id: w", "X-Shopify-Shop-Domain: s"},
			is:      ErrMalformed, index: -1, part: "body"},
		{name: "hmac query key part missing", cfg: hmacCfg, body: `x`, headers: []string{"X-Event-Id: e"},
			is: ErrMissing, index: 0, part: "event id", selector: "query:seq"},
		{name: "path tenant on a source without one", cfg: presetConfig("standard"), body: `{}`,
			headers: []string{"webhook-id: m"}, pathTenant: "acme",
			is: ErrPathTenant, index: -1, part: "tenant", selector: "path"},
		{name: "path tenant missing", cfg: pathCfg, body: `{}`, headers: []string{"webhook-id: m"},
			is: ErrMissing, index: 0, part: "tenant", selector: "path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTestSource(t, tt.cfg)
			url := tt.url
			if url == "" {
				url = "/in/" + s.Name
			}
			events, err := s.Events(newRequest(url, []byte(tt.body), tt.headers...), []byte(tt.body), tt.pathTenant)
			if events != nil {
				t.Errorf("got %d events with the error", len(events))
			}
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("error %v (%T) is not a *RequestError", err, err)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
			if re.Index != tt.index || re.Part != tt.part || re.Selector != tt.selector {
				t.Errorf("error = {Index %d, Part %q, Selector %q}, want {%d, %q, %q}",
					re.Index, re.Part, re.Selector, tt.index, tt.part, tt.selector)
			}
		})
	}
}

func TestRequestErrorMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *RequestError
		want string
	}{
		{&RequestError{Index: 2, Part: "event id", Selector: "json:eventId", Err: ErrMissing}, "event 2: event id: json:eventId: missing or empty"},
		{&RequestError{Index: -1, Part: "body", Err: ErrBatchSize}, "body: batch size out of range"},
		{&RequestError{Index: -1, Part: "tenant", Selector: "path", Err: ErrPathTenant}, "tenant: path: this source takes no tenant in the URL path"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
