package provider_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/provider"
)

// builtin are the providers hookgate ships, in the order documentation
// and messages name them.
var builtin = []string{"standard", "stripe", "github", "shopify", "hubspot", "salesforce", "shippo", "hmac"}

// TestNames: every provider is registered once, in the documented order
// (init functions run in file-name order, not this one).
func TestNames(t *testing.T) {
	if got := provider.Names()[:len(builtin)]; !slices.Equal(got, builtin) {
		t.Errorf("Names() = %v, want %v", got, builtin)
	}
	for _, name := range builtin {
		p, ok := provider.Lookup(name)
		if !ok || p.Name != name {
			t.Errorf("Lookup(%q) = %v, %v", name, p, ok)
			continue
		}
		if p.NewScheme == nil {
			t.Errorf("%s: no verifier", name)
		}
	}
	if _, ok := provider.Lookup("strpe"); ok {
		t.Error(`Lookup("strpe") found a provider`)
	}
}

// TestPresetSelectors: every selector of every preset is valid
// configuration syntax, and every derived selector says what it reads.
func TestPresetSelectors(t *testing.T) {
	t.Parallel()
	for _, p := range provider.All() {
		pp := p.Preset
		sels := append([]provider.Selector{pp.Scope[0], pp.Scope[1], pp.Tenant,
			pp.Entity.Type, pp.Entity.ID, pp.Entity.Version, pp.Entity.State}, pp.Key...)
		for _, sel := range sels {
			if sel.Derived != nil && (len(sel.Derived.Reads) == 0 || sel.Derived.Desc == "") {
				t.Errorf("%s: derived selector %q reads nothing or has no description", p.Name, sel.Derived.Desc)
			}
			for _, r := range sel.Reads() {
				if _, err := config.ParseSelector(r); err != nil {
					t.Errorf("%s: preset selector %q: %v", p.Name, r, err)
				}
			}
		}
	}
}

// recorder is an event whose every declared selector has a value; reading
// an undeclared one fails the test, since a source keeps and checks only
// the body fields a derived selector declares.
type recorder struct {
	t        *testing.T
	declared []string
	values   map[string]string
}

func (r recorder) Read(sel string) (string, error) {
	if !slices.Contains(r.declared, sel) {
		r.t.Errorf("reads %q, which it does not declare (%v)", sel, r.declared)
	}
	if v, ok := r.values[sel]; ok && v != "" {
		return v, nil
	}
	return "", provider.ErrMissing
}

// TestDerivedSelectors: each derived selector reads only what it
// declares, computes the documented value, and reports a missing value as
// ErrMissing.
func TestDerivedSelectors(t *testing.T) {
	t.Parallel()
	lookup := func(name string) provider.Preset {
		p, ok := provider.Lookup(name)
		if !ok {
			t.Fatalf("no provider %s", name)
		}
		return p.Preset
	}
	stripe, shopify, hubspot, sf := lookup("stripe"), lookup("shopify"), lookup("hubspot"), lookup("salesforce")
	for _, tc := range []struct {
		name   string
		sel    provider.Selector
		values map[string]string
		want   string
	}{
		{"stripe refunded", stripe.Entity.State, map[string]string{"json:data.object.refunded": "true", "json:data.object.status": "succeeded"}, "refunded"},
		{"stripe status", stripe.Entity.State, map[string]string{"json:data.object.refunded": "false", "json:data.object.status": "succeeded"}, "succeeded"},
		{"shopify resource", shopify.Entity.Type, map[string]string{"header:X-Shopify-Topic": "orders/updated"}, "orders"},
		{"hubspot object", hubspot.Scope[0], map[string]string{"json:subscriptionType": "deal.propertyChange"}, "deal"},
		{"hubspot action", hubspot.Scope[1], map[string]string{"json:subscriptionType": "deal.propertyChange", "json:propertyName": "dealstage"}, "propertyChange.dealstage"},
		{"hubspot creation", hubspot.Scope[1], map[string]string{"json:subscriptionType": "contact.creation"}, "creation"},
		{"hubspot entity", hubspot.Entity.Type, map[string]string{"json:subscriptionType": "deal.propertyChange", "json:propertyName": "amount"}, "deal.amount"},
		{"salesforce type", sf.Entity.Type, map[string]string{"xml:sObject/@type": "sf:Opportunity"}, "Opportunity"},
		{"salesforce version", sf.Entity.Version, map[string]string{"xml:sObject/SystemModstamp": "2026-12-01T12:00:00Z"}, "2026-12-01T12:00:00Z"},
		{"salesforce tenant", sf.Tenant, map[string]string{"xml:/Envelope/Body/notifications/OrganizationId": "00D5e000000AbCd"}, "00D5e000000AbCdEAK"},
	} {
		d := tc.sel.Derived
		if d == nil {
			t.Errorf("%s: not a derived selector", tc.name)
			continue
		}
		got, err := d.Value(recorder{t, d.Reads, tc.values})
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
		if _, err := d.Value(recorder{t, d.Reads, nil}); !errors.Is(err, provider.ErrMissing) {
			t.Errorf("%s of an empty event: %v, want ErrMissing", tc.name, err)
		}
	}
	_, err := sf.Tenant.Derived.Value(recorder{t, sf.Tenant.Derived.Reads,
		map[string]string{"xml:/Envelope/Body/notifications/OrganizationId": "00Dshort"}})
	if !errors.Is(err, provider.ErrMalformed) {
		t.Errorf("salesforce tenant of a short id: %v, want ErrMalformed", err)
	}
}

// TestExamples: every example names a template that exists, and its
// provider's default comes first.
func TestExamples(t *testing.T) {
	t.Parallel()
	for _, p := range provider.All() {
		for _, e := range p.Examples {
			if _, err := os.Stat(filepath.Join("..", "trigger", "fixtures", p.Name, e.File)); err != nil {
				t.Errorf("%s %s: %v", p.Name, e.Event, err)
			}
		}
	}
}

// TestSOAPAnswer: a Salesforce outbound message is answered with the Ack
// when stored or a duplicate (else it is retried for a day), with a SOAP
// fault otherwise: Server for what should be retried, Client for what the
// sender got wrong, the message escaped.
func TestSOAPAnswer(t *testing.T) {
	t.Parallel()
	p, _ := provider.Lookup("salesforce")
	for _, tc := range []struct {
		status     int
		wantStatus int
		want       string
	}{
		{http.StatusAccepted, http.StatusOK, "<Ack>true</Ack>"},
		{http.StatusOK, http.StatusOK, "<Ack>true</Ack>"},
		{http.StatusBadRequest, http.StatusBadRequest, "<faultcode>soapenv:Client</faultcode>"},
		{http.StatusConflict, http.StatusConflict, "<faultcode>soapenv:Server</faultcode>"},
		{http.StatusServiceUnavailable, http.StatusServiceUnavailable, "<faultstring>a &lt;b&gt; &amp; c</faultstring>"},
	} {
		w := httptest.NewRecorder()
		p.Answer(w, tc.status, "a <b> & c")
		if w.Code != tc.wantStatus || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("status %d: answered %d %s, want %d with %s", tc.status, w.Code, w.Body, tc.wantStatus, tc.want)
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/xml") {
			t.Errorf("status %d: Content-Type %q", tc.status, ct)
		}
	}
	for _, name := range builtin {
		if q, _ := provider.Lookup(name); name != "salesforce" && q.Answer != nil {
			t.Errorf("%s answers with its own body", name)
		}
	}
}
