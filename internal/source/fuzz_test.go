package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/hookgate/hookgate/internal/config"
)

// FuzzEvents feeds arbitrary bodies, header values and path tenants to a
// source of every preset: each call returns either a *RequestError and no
// events, or 1 to MaxBatch well-formed events, and never panics.
func FuzzEvents(f *testing.F) {
	var sources []*Source
	for _, p := range []string{"standard", "stripe", "github",
		"shopify", "hubspot", "salesforce", "shippo",
		"hmac"} {
		sources = append(sources, newTestSource(f, presetConfig(p)))
	}
	pathCfg := presetConfig("hmac")
	pathCfg.Name, pathCfg.Tenant = "path-src", "path"
	pathCfg.Key = []string{"json:id", "header:X-Event-Id", "query:seq"}
	pathCfg.Scope = []string{"json:a.0.b", "json:type"}
	pathCfg.Entity = config.Entity{ID: "json:id", Version: "json:v", State: "json:s"}
	sources = append(sources, newTestSource(f, pathCfg))

	for _, name := range []string{"stripe-event.json", "hubspot-batch.json", "shippo-track-updated.json",
		"salesforce-outbound.xml", "salesforce-three.xml"} {
		f.Add(fixture(f, name), "id-1", "")
	}
	f.Add([]byte(`{"id":"e","v":"2026-12-01T00:00:00Z","a":[{"b":1}]}`), "x|y", "acme")
	f.Add([]byte(`[{"eventId":1,"subscriptionId":2,"portalId":3,"occurredAt":4,"objectId":5}]`), "", "t")
	f.Add([]byte(`<a><b>`), "\\", "")
	f.Add([]byte(`{"id":"evt_A","\u0069d":"evt_B"}`), "h", "")

	f.Fuzz(func(t *testing.T, body []byte, header, pathTenant string) {
		for _, s := range sources {
			r := newRequest("/in/x?seq=1&token=t", body,
				"webhook-id: "+header, "X-GitHub-Delivery: "+header, "X-GitHub-Event: "+header,
				"X-Shopify-Webhook-Id: "+header, "X-Shopify-Shop-Domain: "+header, "X-Shopify-Topic: "+header,
				"X-Shopify-Triggered-At: "+header, "X-Event-Id: "+header)
			events, err := s.Events(r, body, pathTenant)
			if err != nil {
				var re *RequestError
				if !errors.As(err, &re) || events != nil {
					t.Fatalf("%s: error %v (%T) with %d events", s.Name, err, err, len(events))
				}
				continue
			}
			if len(events) == 0 || len(events) > MaxBatch {
				t.Fatalf("%s: %d events", s.Name, len(events))
			}
			for i, ev := range events {
				switch {
				case ev.Hash != ev.Key.Hash():
					t.Fatalf("%s: event %d hash does not match its key", s.Name, i)
				case ev.Key.Provider != s.Name || ev.EventID == "" || ev.EventID != ev.Key.EventID:
					t.Fatalf("%s: event %d key %#v", s.Name, i, ev.Key)
				case s.tenant != nil && ev.Tenant == "":
					t.Fatalf("%s: event %d has no tenant", s.Name, i)
				case ev.Entity.Order != order(ev.Entity.Version):
					t.Fatalf("%s: event %d order %d for version %q", s.Name, i, ev.Entity.Order, ev.Entity.Version)
				case len(body) > 0 && !bytes.Contains(body, ev.Payload):
					t.Fatalf("%s: event %d payload is not part of the body", s.Name, i)
				}
			}
			// What the key says is what encoding/json, which takes the last
			// of two members, reads.
			var std struct{ ID any }
			if s.Provider == "stripe" && json.Unmarshal(body, &std) == nil {
				if id, ok := std.ID.(string); ok && events[0].EventID != joinID(id) {
					t.Fatalf("stripe: keyed as %q, encoding/json reads id %q", events[0].EventID, id)
				}
			}
		}
	})
}
