package source

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/verify"
)

func nanos(t testing.TB, s string) int64 {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixNano()
}

type wantEvent struct {
	key    dedupe.Key
	entity Entity
}

// TestPresets authenticates a signed delivery of every provider and checks
// the keys, tenants and entity fields its events get.
func TestPresets(t *testing.T) {
	t.Parallel()
	with := func(provider string, edit func(*config.Source)) config.Source {
		cfg := presetConfig(provider)
		if edit != nil {
			edit(&cfg)
		}
		return cfg
	}
	stripeLive := []byte(`{"id":"evt_2","object":"event","created":1764583300,"type":"charge.succeeded","account":"acct_9",
		"data":{"object":{"id":"ch_2","object":"charge","status":"succeeded","refunded":false}}}`)
	shopifyBody := []byte(`{"id":820982911946154508,"email":"jon@example.com","total_price":"409.94"}`)

	tests := []struct {
		name       string
		cfg        config.Source
		body       []byte
		url        string
		headers    []string
		pathTenant string
		want       []wantEvent
	}{
		{
			name:    "standard",
			cfg:     with("standard", nil),
			body:    []byte(`{"type":"invoice.paid"}`),
			headers: []string{"webhook-id: msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"},
			want:    []wantEvent{{key: dedupe.Key{Provider: "standard-src", EventID: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"}}},
		},
		{
			name:       "standard, tenant from path",
			cfg:        with("standard", func(c *config.Source) { c.Tenant = "path" }),
			body:       []byte(`not json at all`),
			headers:    []string{"webhook-id: msg_1"},
			pathTenant: "acme",
			want:       []wantEvent{{key: dedupe.Key{Tenant: "acme", Provider: "standard-src", EventID: "msg_1"}}},
		},
		{
			name: "stripe refunded charge",
			cfg:  with("stripe", nil),
			body: fixture(t, "stripe-event.json"),
			want: []wantEvent{{
				key: dedupe.Key{Provider: "stripe-src", ObjectType: "charge", Action: "charge.refunded", EventID: "evt_3QxY1b2eZvKYlo2C0abc1234"},
				entity: Entity{Type: "charge", ID: "ch_3QxY1b2eZvKYlo2C0xyz9876", State: "refunded",
					Version: "1764583200", Order: 1764583200},
			}},
		},
		{
			name: "stripe connect account as tenant",
			cfg:  with("stripe", func(c *config.Source) { c.Tenant = "json:account" }),
			body: stripeLive,
			want: []wantEvent{{
				key:    dedupe.Key{Tenant: "acct_9", Provider: "stripe-src", ObjectType: "charge", Action: "charge.succeeded", EventID: "evt_2"},
				entity: Entity{Type: "charge", ID: "ch_2", State: "succeeded", Version: "1764583300", Order: 1764583300},
			}},
		},
		{
			name: "stripe entity state overridden",
			cfg: with("stripe", func(c *config.Source) {
				c.Entity.State = "json:data.object.status"
				c.Scope = []string{"json:type"}
			}),
			body: fixture(t, "stripe-event.json"),
			want: []wantEvent{{
				key: dedupe.Key{Provider: "stripe-src", ObjectType: "charge.refunded", EventID: "evt_3QxY1b2eZvKYlo2C0abc1234"},
				entity: Entity{Type: "charge", ID: "ch_3QxY1b2eZvKYlo2C0xyz9876", State: "succeeded",
					Version: "1764583200", Order: 1764583200},
			}},
		},
		{
			name:    "github",
			cfg:     with("github", nil),
			body:    []byte(`{"zen":"Keep it logically awesome."}`),
			headers: []string{"X-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958", "X-GitHub-Event: ping"},
			want:    []wantEvent{{key: dedupe.Key{Provider: "github-src", Action: "ping", EventID: "72d3162e-cc78-11e3-81ab-4c9367dc0958"}}},
		},
		{
			name:    "github, tenant from query",
			cfg:     with("github", func(c *config.Source) { c.Tenant = "query:org" }),
			body:    []byte(`payload=%7B%7D`),
			url:     "/in/gh?org=acme&x=1",
			headers: []string{"X-GitHub-Delivery: d-1", "X-GitHub-Event: push"},
			want:    []wantEvent{{key: dedupe.Key{Tenant: "acme", Provider: "github-src", Action: "push", EventID: "d-1"}}},
		},
		{
			name: "shopify",
			cfg:  with("shopify", nil),
			body: shopifyBody,
			headers: []string{"X-Shopify-Webhook-Id: b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
				"X-Shopify-Shop-Domain: acme.myshopify.com", "X-Shopify-Topic: orders/updated",
				"X-Shopify-Triggered-At: 2026-12-01T10:00:00.123456789Z"},
			want: []wantEvent{{
				key: dedupe.Key{Tenant: "acme.myshopify.com", Provider: "shopify-src", Action: "orders/updated",
					EventID: "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"},
				entity: Entity{Type: "orders", ID: "820982911946154508", Version: "2026-12-01T10:00:00.123456789Z",
					Order: nanos(t, "2026-12-01T10:00:00.123456789Z")},
			}},
		},
		{
			name: "hubspot batch",
			cfg:  with("hubspot", nil),
			body: fixture(t, "hubspot-batch.json"),
			url:  "https://hooks.example.com/in/crm",
			want: []wantEvent{
				{
					key: dedupe.Key{Tenant: "62515", Provider: "hubspot-src", ObjectType: "deal", Action: "propertyChange.dealstage",
						EventID: "4461|1857201|9103311|1764583200000"},
					entity: Entity{Type: "deal.dealstage", ID: "9103311", State: "closedwon", Version: "1764583200000", Order: 1764583200000},
				},
				{
					key: dedupe.Key{Tenant: "62515", Provider: "hubspot-src", ObjectType: "deal", Action: "propertyChange.amount",
						EventID: "4461|1857202|9103311|1764583201000"},
					entity: Entity{Type: "deal.amount", ID: "9103311", State: "12000", Version: "1764583201000", Order: 1764583201000},
				},
				{
					key: dedupe.Key{Tenant: "62515", Provider: "hubspot-src", ObjectType: "contact", Action: "creation",
						EventID: "4470|1857203|551|1764583202000"},
					entity: Entity{Type: "contact", ID: "551", Version: "1764583202000", Order: 1764583202000},
				},
			},
		},
		{
			name: "salesforce",
			cfg:  with("salesforce", nil),
			body: fixture(t, "salesforce-outbound.xml"),
			want: []wantEvent{
				{
					key: dedupe.Key{Tenant: testOrg, Provider: "salesforce-src", EventID: "04l5e00000AbC1AAAV"},
					entity: Entity{Type: "Opportunity", ID: "0065e00000QwErTAAZ", Version: "2026-12-01T10:15:02.000Z",
						Order: nanos(t, "2026-12-01T10:15:02Z")},
				},
				{
					key: dedupe.Key{Tenant: testOrg, Provider: "salesforce-src", EventID: "04l5e00000AbC2AAAV"},
					entity: Entity{Type: "Opportunity", ID: "0065e00000AsDfGAAZ", Version: "2026-12-01T10:15:07.000Z",
						Order: nanos(t, "2026-12-01T10:15:07Z")},
				},
			},
		},
		{
			name: "salesforce with token and xml overrides",
			cfg: with("salesforce", func(c *config.Source) {
				c.Token = config.NewSecret("sf-token")
				c.Scope = []string{"xml:sObject/@type", "xml:/Envelope/Body/notifications/ActionId"}
				c.Entity.State = "xml:sObject/StageName"
			}),
			body: fixture(t, "salesforce-outbound.xml"),
			want: []wantEvent{
				{
					key: dedupe.Key{Tenant: testOrg, Provider: "salesforce-src", ObjectType: "sf:Opportunity",
						Action: "04k5e000000XyZaAAC", EventID: "04l5e00000AbC1AAAV"},
					entity: Entity{Type: "Opportunity", ID: "0065e00000QwErTAAZ", State: "Closed Won",
						Version: "2026-12-01T10:15:02.000Z", Order: nanos(t, "2026-12-01T10:15:02Z")},
				},
				{
					key: dedupe.Key{Tenant: testOrg, Provider: "salesforce-src", ObjectType: "sf:Opportunity",
						Action: "04k5e000000XyZaAAC", EventID: "04l5e00000AbC2AAAV"},
					entity: Entity{Type: "Opportunity", ID: "0065e00000AsDfGAAZ", State: "Negotiation",
						Version: "2026-12-01T10:15:07.000Z", Order: nanos(t, "2026-12-01T10:15:07Z")},
				},
			},
		},
		{
			name: "shippo signed",
			cfg:  with("shippo", nil),
			body: fixture(t, "shippo-track-updated.json"),
			want: []wantEvent{{
				key: dedupe.Key{Provider: "shippo-src", Action: "track_updated",
					EventID: "usps|9205590164917312751089|TRANSIT|2026-12-01T13:58:00Z"},
				entity: Entity{ID: "9205590164917312751089", State: "TRANSIT", Version: "2026-12-01T13:58:00Z",
					Order: nanos(t, "2026-12-01T13:58:00Z")},
			}},
		},
		{
			name: "shippo token only",
			cfg: with("shippo", func(c *config.Source) {
				c.Secret = config.Secret{}
				c.Token = config.NewSecret("shippo-token")
			}),
			body: fixture(t, "shippo-track-updated.json"),
			want: []wantEvent{{
				key: dedupe.Key{Provider: "shippo-src", Action: "track_updated",
					EventID: "usps|9205590164917312751089|TRANSIT|2026-12-01T13:58:00Z"},
				entity: Entity{ID: "9205590164917312751089", State: "TRANSIT", Version: "2026-12-01T13:58:00Z",
					Order: nanos(t, "2026-12-01T13:58:00Z")},
			}},
		},
		{
			name: "hmac with every selector kind",
			cfg: with("hmac", func(c *config.Source) {
				c.Key = []string{"header:X-Event-Id", "json:seq", "query:attempt_group"}
				c.Scope = []string{"const:custom", "json:type"}
				c.Tenant = "header:X-Tenant"
				c.Entity = config.Entity{Type: "const:order", ID: "json:order.id", Version: "json:order.version", State: "json:order.lines.0.status"}
			}),
			body:    []byte(`{"seq":7,"type":"order.updated","order":{"id":"o-1","version":"12","lines":[{"status":"packed"}]}}`),
			url:     "/in/custom?attempt_group=g1",
			headers: []string{"X-Event-Id: e-1", "X-Tenant: t-1"},
			want: []wantEvent{{
				key:    dedupe.Key{Tenant: "t-1", Provider: "hmac-src", ObjectType: "custom", Action: "order.updated", EventID: "e-1|7|g1"},
				entity: Entity{Type: "order", ID: "o-1", State: "packed", Version: "12", Order: 12},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTestSource(t, tt.cfg)
			url := tt.url
			if url == "" {
				url = "/in/" + s.Name
			}
			r := signedRequest(t, s, url, tt.body, tt.headers...)
			if _, err := s.Authenticate(r, tt.body); err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			events, err := s.Events(r, tt.body, tt.pathTenant)
			if err != nil {
				t.Fatalf("Events: %v", err)
			}
			if len(events) != len(tt.want) {
				t.Fatalf("got %d events, want %d", len(events), len(tt.want))
			}
			for i, ev := range events {
				if ev.Key != tt.want[i].key {
					t.Errorf("event %d key = %#v\nwant %#v", i, ev.Key, tt.want[i].key)
				}
				if ev.Entity != tt.want[i].entity {
					t.Errorf("event %d entity = %+v\nwant %+v", i, ev.Entity, tt.want[i].entity)
				}
				if ev.Hash != ev.Key.Hash() || ev.Tenant != ev.Key.Tenant || ev.EventID != ev.Key.EventID {
					t.Errorf("event %d: Hash/Tenant/EventID do not match its key", i)
				}
				if len(ev.Payload) == 0 || !bytes.Contains(tt.body, ev.Payload) {
					t.Errorf("event %d payload %q is not part of the body", i, ev.Payload)
				}
			}
		})
	}
}

func TestPayloads(t *testing.T) {
	t.Parallel()
	hs := newTestSource(t, presetConfig("hubspot"))
	body := fixture(t, "hubspot-batch.json")
	events, err := hs.Events(newRequest("/in/crm", body), body, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range events {
		if !bytes.HasPrefix(ev.Payload, []byte("{")) || !bytes.HasSuffix(ev.Payload, []byte("}")) ||
			!bytes.Contains(ev.Payload, []byte(fmt.Sprintf(`"eventId": %d`, 1857201+i))) {
			t.Errorf("hubspot event %d payload = %s", i, ev.Payload)
		}
	}

	st := newTestSource(t, presetConfig("stripe"))
	body = fixture(t, "stripe-event.json")
	events, err = st.Events(newRequest("/in/stripe", body), body, "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(events[0].Payload, body) {
		t.Errorf("stripe payload is not the whole body")
	}
}

// TestSalesforceSplit splits a message of three notifications, one of them
// about another sObject type that carries SystemModstamp only.
func TestSalesforceSplit(t *testing.T) {
	t.Parallel()
	s := newTestSource(t, presetConfig("salesforce"))
	body := fixture(t, "salesforce-three.xml")
	r := newRequest("/in/sf", body, "Content-Type: text/xml; charset=utf-8", "SOAPAction: \"\"")
	if _, err := s.Authenticate(r, body); err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	events, err := s.Events(r, body, "")
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"04l5e00000AbC1AAAV", "04l5e00000AbC2AAAV", "04l5e00000AbC3AAAV"}
	if len(events) != len(ids) {
		t.Fatalf("got %d events, want 3", len(events))
	}
	for i, ev := range events {
		if ev.EventID != ids[i] || ev.Tenant != testOrg {
			t.Errorf("event %d: id %q tenant %q", i, ev.EventID, ev.Tenant)
		}
		p := string(ev.Payload)
		if !strings.HasPrefix(p, "<Notification>") || !strings.HasSuffix(p, "</Notification>") ||
			strings.Count(p, "<Notification>") != 1 || !strings.Contains(p, "<Id>"+ids[i]+"</Id>") {
			t.Errorf("event %d payload = %s", i, p)
		}
		if ev.Headers["Content-Type"] != "text/xml; charset=utf-8" || ev.Headers["Soapaction"] != `""` {
			t.Errorf("event %d headers = %v", i, ev.Headers)
		}
	}
	want := Entity{Type: "Account", ID: "0015e00000ZxCvBAAZ", Version: "2026-12-01T10:16:00.000Z", Order: nanos(t, "2026-12-01T10:16:00Z")}
	if events[2].Entity != want {
		t.Errorf("third entity = %+v, want %+v", events[2].Entity, want)
	}
}

// TestHubSpotRetryKeepsKey: a retry differs only in attemptNumber, which must
// not change the key; a different occurrence must.
func TestHubSpotRetryKeepsKey(t *testing.T) {
	t.Parallel()
	s := newTestSource(t, presetConfig("hubspot"))
	event := func(attempt int, occurredAt int64) dedupe.Hash {
		t.Helper()
		body := fmt.Appendf(nil, `[{"eventId":1857201,"subscriptionId":4461,"portalId":62515,"occurredAt":%d,
			"subscriptionType":"deal.propertyChange","attemptNumber":%d,"objectId":9103311,
			"propertyName":"dealstage","propertyValue":"closedwon"}]`, occurredAt, attempt)
		events, err := s.Events(newRequest("/in/crm", body), body, "")
		if err != nil {
			t.Fatal(err)
		}
		return events[0].Hash
	}
	first, retry := event(0, 1764583200000), event(3, 1764583200000)
	if first != retry {
		t.Errorf("attemptNumber 0 and 3 give different hashes %v, %v", first, retry)
	}
	if other := event(0, 1764583200001); other == first {
		t.Errorf("a different occurredAt gives the same hash")
	}
}

// TestHeaders: events carry the provider's id, topic and timestamp headers,
// headers selectors read and Content-Type, canonically named, and never the
// signature.
func TestHeaders(t *testing.T) {
	t.Parallel()
	cfg := presetConfig("shopify")
	cfg.Tenant = "header:x-store"
	s := newTestSource(t, cfg)
	body := []byte(`{"id":1}`)
	r := signedRequest(t, s, "/in/shop", body, "X-Shopify-Webhook-Id: w-1", "X-Shopify-Topic: orders/create",
		"x-store: s-1", "X-Unrelated: no")
	events, err := s.Events(r, body, "")
	if err != nil {
		t.Fatal(err)
	}
	got := events[0].Headers
	want := map[string]string{"Content-Type": "application/json", "X-Shopify-Webhook-Id": "w-1",
		"X-Shopify-Topic": "orders/create", "X-Store": "s-1"}
	if len(got) != len(want) {
		t.Errorf("headers = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("header %s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["X-Shopify-Hmac-Sha256"]; ok {
		t.Error("events carry the signature header")
	}
}

func TestJoinID(t *testing.T) {
	t.Parallel()
	lists := [][]string{
		{"a|b"}, {"a", "b"}, {"a\\", "b"}, {"a", "\\b"}, {"a\\|b"}, {"a\\", "|b"},
		{"a|", "b"}, {"a", "|b"}, {"a", "", "b"}, {"a", "|", "b"}, {"a||b"}, {"a\\\\", "b"}, {"a\\\\|b"},
	}
	seen := map[string][]string{}
	for _, l := range lists {
		id := joinID(l...)
		if prev, ok := seen[id]; ok {
			t.Errorf("%q and %q both join to %q", prev, l, id)
		}
		seen[id] = l
	}
	if got := joinID("usps", "92055", "TRANSIT"); got != "usps|92055|TRANSIT" {
		t.Errorf("joinID = %q", got)
	}
	if got := joinID(`a|b\c`); got != `a\|b\\c` {
		t.Errorf("joinID escapes to %q", got)
	}
}

// TestKeyPartsStayApart: through a source, moving a '|' between two header
// parts gives a different key.
func TestKeyPartsStayApart(t *testing.T) {
	t.Parallel()
	cfg := presetConfig("hmac")
	cfg.Key = []string{"header:X-A", "header:X-B"}
	s := newTestSource(t, cfg)
	hash := func(a, b string) dedupe.Hash {
		t.Helper()
		events, err := s.Events(newRequest("/in/x", nil, "X-A: "+a, "X-B: "+b), nil, "")
		if err != nil {
			t.Fatal(err)
		}
		return events[0].Hash
	}
	if hash("x|y", "z") == hash("x", "y|z") {
		t.Error(`parts "x|y","z" and "x","y|z" give one key`)
	}
}

func TestOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
	}{
		{"", 0},
		{"1764583200000", 1764583200000},
		{"-5", -5},
		{"2026-12-01T13:58:00Z", nanos(t, "2026-12-01T13:58:00Z")},
		{"2026-12-01T10:15:02.000+02:00", nanos(t, "2026-12-01T08:15:02Z")},
		{"12.9", 12},
		{"1.7645832e12", 1764583200000},
		{"3000-01-01T00:00:00Z", 0},
		{"1e300", 0},
		{"NaN", 0},
		{"closedwon", 0},
	}
	for _, tt := range tests {
		if got := order(tt.in); got != tt.want {
			t.Errorf("order(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestWindow(t *testing.T) {
	t.Parallel()
	cfg := presetConfig("github")
	for _, tt := range []struct {
		own, dflt config.Duration
		want      time.Duration
	}{
		{config.Duration(time.Hour), config.Duration(48 * time.Hour), time.Hour},
		{0, config.Duration(48 * time.Hour), 48 * time.Hour},
		{0, 0, 168 * time.Hour},
	} {
		cfg.Window = tt.own
		s, err := New(cfg, config.Dedupe{Window: tt.dflt})
		if err != nil {
			t.Fatal(err)
		}
		if s.Window != tt.want {
			t.Errorf("window %v, default %v: got %v, want %v", tt.own, tt.dflt, s.Window, tt.want)
		}
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  config.Source
		is   error
	}{
		{"invalid config", config.Source{Name: "x", Provider: "github"}, config.ErrInvalid},
		{"unknown provider", config.Source{Name: "x", Provider: "strpe", Secret: config.NewSecret("s")}, config.ErrInvalid},
		{"standard secret not base64", config.Source{Name: "x", Provider: "standard", Secret: config.NewSecret("whsec_!!!")}, verify.ErrConfig},
		{"salesforce org checksum", config.Source{Name: "x", Provider: "salesforce", OrganizationID: "00D5e000000AbCdAAA"}, verify.ErrConfig},
	}
	for _, tt := range tests {
		s, err := New(tt.cfg, testDedupe)
		if !errors.Is(err, tt.is) || s != nil {
			t.Errorf("%s: New = %v, %v; want %v", tt.name, s, err, tt.is)
		}
		if err != nil && !strings.Contains(err.Error(), `source "x"`) {
			t.Errorf("%s: error %q does not name the source", tt.name, err)
		}
	}
}

// TestAuthenticateFailsClosed: wrong secrets, missing signatures and a Source
// not built by New are all rejected.
func TestAuthenticateFailsClosed(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"standard", "stripe", "github",
		"shopify", "hubspot", "shippo", "hmac"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			s := newTestSource(t, presetConfig(provider))
			otherCfg := presetConfig(provider)
			otherCfg.Secret = config.NewSecret("whsec_" + "b3RoZXItc2VjcmV0")
			other := newTestSource(t, otherCfg)
			body := []byte(`{"id":"evt_1"}`)
			forged := signedRequest(t, other, "https://hooks.example.com/in/x", body, "webhook-id: m1")
			if _, err := s.Authenticate(forged, body); err == nil {
				t.Error("a request signed with another secret authenticated")
			}
			if _, err := s.Authenticate(newRequest("https://hooks.example.com/in/x", body, "webhook-id: m1"), body); err == nil {
				t.Error("an unsigned request authenticated")
			}
			good := signedRequest(t, s, "https://hooks.example.com/in/x", body, "webhook-id: m1")
			if _, err := s.Authenticate(good, []byte(`{"id":"evt_2"}`)); err == nil {
				t.Error("a signed request with a changed body authenticated")
			}
		})
	}
	sf := newTestSource(t, presetConfig("salesforce"))
	body := bytes.Replace(fixture(t, "salesforce-outbound.xml"), []byte(testOrg), []byte("00D5e000000ZzZzEAK"), 1)
	if _, err := sf.Authenticate(newRequest("/in/sf", body), body); !errors.Is(err, verify.ErrMismatch) {
		t.Errorf("salesforce message of another organization: %v, want ErrMismatch", err)
	}
	var zero Source
	if _, err := zero.Authenticate(newRequest("/in/x", nil), nil); err == nil {
		t.Error("a Source not built by New authenticated")
	}
}

// TestPathTenant: a path tenant is 1 to 128 bytes of printable UTF-8; any
// other is refused with a reason that names the character by code point.
func TestPathTenant(t *testing.T) {
	t.Parallel()
	cfg := presetConfig("standard")
	cfg.Tenant = "path"
	s := newTestSource(t, cfg)
	body := []byte(`{}`)
	r := newRequest("/in/std", body, "webhook-id: msg_1")
	for _, ok := range []string{"acme", "acme corp", "müller-gmbh", "東京", "a/b", strings.Repeat("t", MaxPathTenant)} {
		events, err := s.Events(r, body, ok)
		if err != nil || events[0].Tenant != ok {
			t.Errorf("tenant %q: %v", ok, err)
		}
	}
	for _, tt := range []struct{ tenant, reason string }{
		{"acme\r\nX-Injected: 1", "control character U+000D at byte 4"},
		{"acme\x00", "control character U+0000 at byte 4"},
		{"\x1b[31mred", "control character U+001B at byte 0"},
		{"a\x7f", "control character U+007F at byte 1"},
		{"a\u0085", "control character U+0085 at byte 1"},
		{"a\u202egnp.exe", "unprintable character U+202E at byte 1"},
		{"a\u00a0b", "unprintable character U+00A0 at byte 1"},
		{"acme\xff", "not valid UTF-8"},
		{strings.Repeat("t", MaxPathTenant+1), "129 bytes, more than 128"},
	} {
		_, err := s.Events(r, body, tt.tenant)
		var re *RequestError
		if !errors.As(err, &re) || !errors.Is(err, ErrBadTenant) || re.Part != "tenant" || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("tenant %q: %v, want ErrBadTenant with %q", tt.tenant, err, tt.reason)
		}
	}
}
