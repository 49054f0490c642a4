package intake_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/inbox"
)

// A path tenant with control characters, invalid UTF-8 or over 128 bytes
// is 400 with the reason, after authentication, and stores nothing.
func TestPathTenantRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	h := map[string]string{"webhook-id": "msg_tenant"}
	body := []byte(`{"type":"x"}`)
	for _, tt := range []struct{ path, reason string }{
		{"acme%0d%0aX-Injected:%201", "control character U+000D"},
		{"acme%00", "control character U+0000"},
		{"%1b%5b31mred", "control character U+001B"},
		{"acme%7f", "control character U+007F"},
		{"acme%ff", "not valid UTF-8"},
		{strings.Repeat("t", 129), "129 bytes, more than 128"},
	} {
		st, resp := b.post(t, "stdt", "/in/stdt/"+tt.path, body, h)
		if st != http.StatusBadRequest || !strings.Contains(resp.Error, tt.reason) {
			t.Errorf("tenant %s: %d %+v, want 400 with %q", tt.path, st, resp, tt.reason)
		}
		if st, _ := do(t, b.request(t, "/in/stdt/"+tt.path, nil, body, h)); st != http.StatusUnauthorized {
			t.Errorf("tenant %s unsigned: %d, want 401", tt.path, st)
		}
	}
	if n := b.count(t, "events") + b.count(t, "dedupe_keys"); n != 0 {
		t.Fatalf("rows written for bad tenants: %d", n)
	}
	if st, resp := b.post(t, "stdt", "/in/stdt/"+strings.Repeat("t", 128), body, h); st != http.StatusAccepted {
		t.Errorf("a 128-byte tenant: %d %+v, want 202", st, resp)
	}
}

// A JSON body that parsers read differently is 400 once authenticated,
// 401 before, and stores nothing either way.
func TestAmbiguousJSONRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	for name, tt := range map[string]struct{ body, reason string }{
		"two ids":       {`{"id":"evt_A","id":"evt_B","type":"charge.succeeded"}`, "json:id: duplicate name"},
		"invalid UTF-8": {"{\"id\":\"evt_\xff\",\"type\":\"charge.succeeded\"}", "not valid UTF-8"},
	} {
		body := []byte(tt.body)
		if st, resp := b.post(t, "stripe", "/in/stripe", body, nil); st != http.StatusBadRequest || !strings.Contains(resp.Error, tt.reason) {
			t.Errorf("%s: %d %+v, want 400 with %q", name, st, resp, tt.reason)
		}
		if st, _ := do(t, b.request(t, "/in/stripe", nil, body, nil)); st != http.StatusUnauthorized {
			t.Errorf("%s unsigned: %d, want 401", name, st)
		}
	}
	if n := b.count(t, "events") + b.count(t, "dedupe_keys"); n != 0 {
		t.Fatalf("rows written for ambiguous bodies: %d", n)
	}
}

// One notification sent with the 15- and then the 18-character form of the
// organization is one event, stored under the 18-character form; a
// namespaced look-alike OrganizationId before the real one changes nothing.
func TestSalesforceOrganizationForms(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	msg := fixture(t, "salesforce-outbound.xml")
	as15 := bytes.Replace(msg, []byte(sfOrg), []byte(sfOrg[:15]), 1)
	lookAlike := bytes.Replace(msg, []byte("<OrganizationId>"),
		[]byte(`<x:OrganizationId xmlns:x="urn:evil">00D000000000001AAA</x:OrganizationId><OrganizationId>`), 1)
	for i, body := range [][]byte{as15, msg, lookAlike} {
		st, resp := b.post(t, "sf", "/in/sf", body, map[string]string{"Content-Type": "text/xml"})
		if st != http.StatusOK || !strings.Contains(resp.Error, "<Ack>true</Ack>") {
			t.Fatalf("delivery %d: %d %s, want the Ack", i, st, resp.Error)
		}
		if n := b.count(t, "events"); n != 2 {
			t.Fatalf("delivery %d: %d events stored, want the message's 2", i, n)
		}
	}
	events, err := b.store.List(context.Background(), inbox.Filter{Source: "sf", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if ev.Tenant != sfOrg {
			t.Errorf("event %s: tenant %q, want %q", ev.EventID, ev.Tenant, sfOrg)
		}
	}
}
