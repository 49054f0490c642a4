package provider

import (
	"net/http"

	"github.com/hookgate/hookgate/verify"
)

// Stripe signs with Stripe-Signature (t=, v1=) over the timestamp and the
// body; its event id is in the body, since the delivery header changes on
// each retry.
const Stripe = "stripe"

func init() {
	register(&Provider{
		Name: Stripe,
		rank: 20,
		NewScheme: func(_ Credentials, secret string, opts ...verify.Option) (verify.Scheme, error) {
			return verify.NewStripe(secret, opts...)
		},
		Preset: Preset{
			Body:  BodyJSON,
			Key:   []Selector{Field("json:id")},
			Scope: [2]Selector{Field("json:data.object.object"), Field("json:type")},
			Entity: EntitySelectors{
				Type:    Field("json:data.object.object"),
				ID:      Field("json:data.object.id"),
				Version: Field("json:created"),
				State:   Selector{Derived: stripeState},
			},
		},
		Notes: Notes{Signed: "the body and the t= timestamp", Key: "json:id", Tenant: "none"},
		SenderHeaders: func(h http.Header, _ string, _ []byte) error {
			h.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
			h.Set("Content-Type", "application/json; charset=utf-8")
			return nil
		},
		Examples: []Example{
			{"payment_intent.succeeded", "payment_intent.succeeded.json", "a PaymentIntent was paid"},
			{"charge.succeeded", "charge.succeeded.json", "a card charge succeeded"},
			{"charge.refunded", "charge.refunded.json", "a charge was refunded in full (entity state refunded)"},
			{"customer.created", "customer.created.json", "a customer was created"},
			{"checkout.session.completed", "checkout.session.completed.json", "a Checkout session was paid"},
		},
	})
}

// stripeState is "refunded" for a refunded object, else its status: a
// refunded charge keeps status "succeeded", so status alone would not change
// on a refund.
var stripeState = &Derived{
	Desc:  "json:data.object.refunded, else json:data.object.status",
	Reads: []string{"json:data.object.refunded", "json:data.object.status"},
	Value: func(e Event) (string, error) {
		if v, err := e.Read("json:data.object.refunded"); err == nil && v == "true" {
			return "refunded", nil
		}
		return e.Read("json:data.object.status")
	},
}
