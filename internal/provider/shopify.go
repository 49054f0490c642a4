package provider

import (
	"cmp"
	"net/http"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// Shopify signs the body with X-Shopify-Hmac-Sha256; the webhook id, the
// topic and the shop are headers outside the signature, and one app secret
// serves every shop.
const Shopify = "shopify"

// shopifyAPIVersion is the API version the example requests name (the
// preset keeps it with the event and reads nothing from it) and the one
// the reconciler lists with by default.
const shopifyAPIVersion = "2025-10"

func init() {
	register(&Provider{
		Name: Shopify,
		rank: 40,
		NewScheme: func(_ Credentials, secret string, opts ...verify.Option) (verify.Scheme, error) {
			return verify.NewShopify(secret, opts...)
		},
		Preset: Preset{
			Key:    []Selector{Field("header:X-Shopify-Webhook-Id")},
			Scope:  [2]Selector{{}, Field("header:X-Shopify-Topic")},
			Tenant: Field("header:X-Shopify-Shop-Domain"),
			Entity: EntitySelectors{
				Type:    Selector{Derived: shopifyType},
				ID:      Field("json:id"),
				Version: Field("header:X-Shopify-Triggered-At"),
			},
			Headers: []string{"X-Shopify-Webhook-Id", "X-Shopify-Topic", "X-Shopify-Shop-Domain",
				"X-Shopify-Triggered-At", "X-Shopify-Api-Version", "X-Shopify-Event-Id"},
		},
		Notes: Notes{Signed: "the body only", Key: "header:X-Shopify-Webhook-Id", Tenant: "header:X-Shopify-Shop-Domain",
			Recovered: "objects whose state is newer than the inbox's: accepted as states, via reconcile"},
		Headers: func(event, tenant string, now time.Time) http.Header {
			h := http.Header{}
			h.Set("X-Shopify-Webhook-Id", newUUID())
			h.Set("X-Shopify-Event-Id", newUUID())
			h.Set("X-Shopify-Topic", cmp.Or(event, "orders/create"))
			h.Set("X-Shopify-Shop-Domain", cmp.Or(tenant, "example.myshopify.com"))
			h.Set("X-Shopify-Triggered-At", now.UTC().Format(time.RFC3339Nano))
			h.Set("X-Shopify-API-Version", shopifyAPIVersion)
			return h
		},
		SenderHeaders: func(h http.Header, _ string, _ []byte) error {
			h.Set("User-Agent", "Shopify-Captain-Hook")
			return nil
		},
		Reconcile:       newShopifyReconciler,
		ReconcileFields: []string{FieldShop, FieldResources, FieldAPIVersion},
		ReconcileCheck:  checkShopifyReconcile,
		Examples: []Example{
			{"orders/create", "orders-create.json", "an order was placed"},
			{"orders/paid", "orders-paid.json", "an order was paid"},
			{"customers/create", "customers-create.json", "a customer signed up"},
		},
	})
}

// shopifyType is the resource of the topic: "orders" for "orders/updated".
// Shopify ids are unique per resource only, so the type keeps an order and a
// product with one id apart.
var shopifyType = &Derived{
	Desc:  "header:X-Shopify-Topic before '/'",
	Reads: []string{"header:X-Shopify-Topic"},
	Value: func(e Event) (string, error) {
		t, err := e.Read("header:X-Shopify-Topic")
		if err != nil {
			return "", err
		}
		return nonEmpty(before(t, "/"))
	},
}
