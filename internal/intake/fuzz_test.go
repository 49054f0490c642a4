package intake_test

import (
	"net/http"
	"os"
	"testing"
)

// Arbitrary bodies, correctly signed, through the whole handler for every
// provider: never a panic, never a 5xx; a body that cannot be split or keyed
// is a 400.
func FuzzIntake(f *testing.F) {
	b := setup(f, 1<<16)
	for _, name := range []string{"hubspot-batch.json", "salesforce-outbound.xml", "stripe-event.json"} {
		body, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"id":""}`))
	f.Add([]byte(`<notifications><Notification/></notifications>`))
	sources := []string{"std", "stripe", "gh", "shop", "crm", "sf"}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, src := range sources {
			req := b.request(t, "/in/"+src, nil, body, map[string]string{
				"webhook-id": "msg_fuzz", "X-GitHub-Delivery": "d", "X-Shopify-Webhook-Id": "s",
				"X-Shopify-Shop-Domain": "a.myshopify.com",
			})
			if err := b.sources[src].Signer().Sign(req, body); err != nil {
				continue // Salesforce signs only bodies naming its organization
			}
			st, resp := do(t, req)
			switch st {
			case http.StatusAccepted, http.StatusOK, http.StatusBadRequest:
			default:
				t.Fatalf("%s: %d %+v for body %q", src, st, resp, body)
			}
			if st == http.StatusBadRequest && resp.Error == "" {
				t.Fatalf("%s: 400 without a reason", src)
			}
		}
	})
}
