package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/hookgate/hookgate/verify"
)

// HubSpot sends arrays of events, signed with X-HubSpot-Signature-v3
// (method, URL, body and timestamp), or v1/v2 by its version header.
const HubSpot = "hubspot"

func init() {
	register(&Provider{
		Name: HubSpot,
		rank: 50,
		NewScheme: func(_ Credentials, secret string, opts ...verify.Option) (verify.Scheme, error) {
			return verify.NewHubSpot(secret, opts...)
		},
		Preset: Preset{
			Body: BodyJSONArray,
			Key: []Selector{Field("json:subscriptionId"), Field("json:eventId"),
				Field("json:objectId"), Field("json:occurredAt")},
			Scope:  [2]Selector{{Derived: hubspotObjectType}, {Derived: hubspotAction}},
			Tenant: Field("json:portalId"),
			Entity: EntitySelectors{
				Type:    Selector{Derived: hubspotEntityType},
				ID:      Field("json:objectId"),
				Version: Field("json:occurredAt"),
				State:   Field("json:propertyValue"),
			},
			Headers: []string{"X-Hubspot-Request-Timestamp"},
		},
		Notes: Notes{
			Signed: "v3: method, URL, body and timestamp; v1 and v2: less (see docs/providers.md)",
			Key:    "json:subscriptionId, json:eventId, json:objectId, json:occurredAt",
			Tenant: "json:portalId",
		},
		SenderHeaders: func(h http.Header, secret string, body []byte) error {
			if secret == "" {
				return nil
			}
			// v1: hex SHA-256 of the secret and the body. The preset checks
			// the v3 signature, which decides when present.
			sum := sha256.Sum256(append([]byte(secret), body...))
			h.Set(verify.HeaderHubSpotSignature, hex.EncodeToString(sum[:]))
			h.Set(verify.HeaderHubSpotSignatureVersion, "v1")
			return nil
		},
		Examples: []Example{
			{"contact.creation", "contact.creation.json", "a batch of two contact.creation events"},
			{"contact.propertyChange", "contact.propertyChange.json", "a contact's lifecycle stage became customer"},
			{"deal.propertyChange", "deal.propertyChange.json", "a batch: a deal's stage and amount changed"},
		},
	})
}

// hubspotObjectType is the object of the subscription type: "deal" for
// "deal.propertyChange".
var hubspotObjectType = &Derived{
	Desc:  "json:subscriptionType before '.'",
	Reads: []string{"json:subscriptionType"},
	Value: func(e Event) (string, error) {
		t, err := e.Read("json:subscriptionType")
		if err != nil {
			return "", err
		}
		return nonEmpty(before(t, "."))
	},
}

// hubspotAction is the change of the subscription type, and for a property
// change the property: "propertyChange.dealstage", "creation". A deal's stage
// change and amount change at one instant are two events.
var hubspotAction = &Derived{
	Desc:  "json:subscriptionType after '.', json:propertyName",
	Reads: []string{"json:subscriptionType", "json:propertyName"},
	Value: func(e Event) (string, error) {
		t, err := e.Read("json:subscriptionType")
		if err != nil {
			return "", err
		}
		_, action, _ := strings.Cut(t, ".")
		if p, err := e.Read("json:propertyName"); err == nil {
			action += "." + p
		}
		return nonEmpty(action)
	},
}

// hubspotEntityType is the object type, and for a property change the
// property: "deal.dealstage". Each property is its own entity, whose state is
// the property's value, so that an older change of one property is not made
// stale by a newer change of another.
var hubspotEntityType = &Derived{
	Desc:  "json:subscriptionType before '.', json:propertyName",
	Reads: []string{"json:subscriptionType", "json:propertyName"},
	Value: func(e Event) (string, error) {
		obj, err := hubspotObjectType.Value(e)
		if err != nil {
			return "", err
		}
		if p, err := e.Read("json:propertyName"); err == nil {
			obj += "." + p
		}
		return obj, nil
	},
}
