package provider

import "github.com/hookgate/hookgate/verify"

// Standard is Standard Webhooks: the webhook-signature header over
// webhook-id, webhook-timestamp and the body, with a whsec_ key.
const Standard = "standard"

func init() {
	register(&Provider{
		Name: Standard,
		rank: 10,
		NewScheme: func(_ Credentials, secret string, opts ...verify.Option) (verify.Scheme, error) {
			return verify.NewStandard(secret, opts...)
		},
		SignedHeaders: []string{"webhook-id", "webhook-timestamp"},
		Preset: Preset{
			Key:     []Selector{Field("header:webhook-id")},
			Headers: []string{"Webhook-Id", "Webhook-Timestamp"},
		},
		Notes: Notes{Signed: "webhook-id, webhook-timestamp and the body", Key: "header:webhook-id", Tenant: "none"},
		Examples: []Example{
			{"contact.created", "contact.created.json", "a Standard Webhooks event: a contact was created"},
			{"invoice.paid", "invoice.paid.json", "a Standard Webhooks event: an invoice was paid"},
		},
	})
}
