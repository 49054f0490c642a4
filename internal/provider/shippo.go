package provider

import "github.com/hookgate/hookgate/verify"

// Shippo signs with Shippo-Auth-Signature (t=, v1=), or authenticates by a
// ?token= alone; a tracking update is keyed by what it says, since Shippo
// sends no event id.
const Shippo = "shippo"

func init() {
	register(&Provider{
		Name:   Shippo,
		rank:   70,
		Secret: SecretOrToken,
		Token:  true,
		NewScheme: func(c Credentials, secret string, opts ...verify.Option) (verify.Scheme, error) {
			return verify.NewShippo(secret, c.Token, opts...)
		},
		Preset: Preset{
			Body: BodyJSON,
			Key: []Selector{Field("json:data.carrier"), Field("json:data.tracking_number"),
				Field("json:data.tracking_status.status"), Field("json:data.tracking_status.status_date")},
			Scope: [2]Selector{{}, Field("json:event")},
			Entity: EntitySelectors{
				ID:      Field("json:data.tracking_number"),
				Version: Field("json:data.tracking_status.status_date"),
				State:   Field("json:data.tracking_status.status"),
			},
		},
		Notes: Notes{
			Signed:    "with a secret, the body and the t= timestamp; with a token only, nothing",
			Key:       "carrier, tracking number, status and status date",
			Tenant:    "none",
			Recovered: "tracking statuses newer than the inbox's: accepted as states, via reconcile",
		},
		Reconcile:   newShippoReconciler,
		FinalStates: shippoFinal,
		Examples: []Example{
			{"track_updated", "track_updated.json", "a parcel's tracking status became TRANSIT"},
		},
	})
}
