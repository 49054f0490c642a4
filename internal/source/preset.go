package source

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/verify"
)

// format is how a provider's body is split into events.
type format int

const (
	// formatRaw: one event; the body is not parsed.
	formatRaw format = iota
	// formatJSON: one event; the body must be JSON.
	formatJSON
	// formatJSONArray: a JSON array, one event per element (HubSpot).
	formatJSONArray
	// formatSOAP: a Salesforce outbound message, one event per Notification.
	formatSOAP
)

// preset is what a provider's deliveries carry: where the event id, scope,
// tenant and entity fields are, and the headers later stages need.
type preset struct {
	format  format
	key     []selector
	scope   [2]selector // object type, action; nil for none
	tenant  selector
	entity  entitySels
	headers []string
}

// entitySels holds the selectors of an event's entity fields; nil for none.
type entitySels struct {
	typ, id, version, state selector
}

// presets holds the preset of every provider.
var presets = map[string]preset{
	config.ProviderStandard: {
		key:     []selector{mustSel("header:webhook-id")},
		headers: []string{"Webhook-Id", "Webhook-Timestamp"},
	},
	config.ProviderStripe: {
		format: formatJSON,
		key:    []selector{mustSel("json:id")},
		scope:  [2]selector{mustSel("json:data.object.object"), mustSel("json:type")},
		entity: entitySels{
			typ:     mustSel("json:data.object.object"),
			id:      mustSel("json:data.object.id"),
			version: mustSel("json:created"),
			state:   stripeState,
		},
	},
	config.ProviderGitHub: {
		key:   []selector{mustSel("header:X-GitHub-Delivery")},
		scope: [2]selector{nil, mustSel("header:X-GitHub-Event")},
		headers: []string{"X-Github-Delivery", "X-Github-Event", "X-Github-Hook-Id",
			"X-Github-Hook-Installation-Target-Id", "X-Github-Hook-Installation-Target-Type"},
	},
	config.ProviderShopify: {
		key:    []selector{mustSel("header:X-Shopify-Webhook-Id")},
		scope:  [2]selector{nil, mustSel("header:X-Shopify-Topic")},
		tenant: mustSel("header:X-Shopify-Shop-Domain"),
		entity: entitySels{
			typ:     shopifyType,
			id:      mustSel("json:id"),
			version: mustSel("header:X-Shopify-Triggered-At"),
		},
		headers: []string{"X-Shopify-Webhook-Id", "X-Shopify-Topic", "X-Shopify-Shop-Domain",
			"X-Shopify-Triggered-At", "X-Shopify-Api-Version", "X-Shopify-Event-Id"},
	},
	config.ProviderHubSpot: {
		format: formatJSONArray,
		key: []selector{mustSel("json:subscriptionId"), mustSel("json:eventId"),
			mustSel("json:objectId"), mustSel("json:occurredAt")},
		scope:  [2]selector{hubspotObjectType, hubspotAction},
		tenant: mustSel("json:portalId"),
		entity: entitySels{
			typ:     hubspotEntityType,
			id:      mustSel("json:objectId"),
			version: mustSel("json:occurredAt"),
			state:   mustSel("json:propertyValue"),
		},
		headers: []string{"X-Hubspot-Request-Timestamp"},
	},
	config.ProviderSalesforce: {
		format: formatSOAP,
		key:    []selector{mustSel("xml:Id")},
		tenant: salesforceTenant,
		entity: entitySels{
			typ:     salesforceType,
			id:      mustSel("xml:sObject/Id"),
			version: salesforceVersion,
		},
		headers: []string{"Soapaction"},
	},
	config.ProviderShippo: {
		format: formatJSON,
		key: []selector{mustSel("json:data.carrier"), mustSel("json:data.tracking_number"),
			mustSel("json:data.tracking_status.status"), mustSel("json:data.tracking_status.status_date")},
		scope: [2]selector{nil, mustSel("json:event")},
		entity: entitySels{
			id:      mustSel("json:data.tracking_number"),
			version: mustSel("json:data.tracking_status.status_date"),
			state:   mustSel("json:data.tracking_status.status"),
		},
	},
	config.ProviderHMAC: {},
}

// stripeState is "refunded" for a refunded object, else its status: a
// refunded charge keeps status "succeeded", so status alone would not change
// on a refund.
var stripeState = derivedSel{
	desc: "json:data.object.refunded, else json:data.object.status",
	from: config.SelectJSON,
	read: reads("json:data.object.refunded", "json:data.object.status"),
	fn: func(in *input) (string, error) {
		if in.json.Get("data.object.refunded").Type == gjson.True {
			return "refunded", nil
		}
		return jsonValue(in.json.Get("data.object.status"))
	},
}

// shopifyType is the resource of the topic: "orders" for "orders/updated".
// Shopify ids are unique per resource only, so the type keeps an order and a
// product with one id apart.
var shopifyType = derivedSel{
	desc: "header:X-Shopify-Topic before '/'",
	from: config.SelectHeader,
	fn: func(in *input) (string, error) {
		return nonEmpty(before(in.header("X-Shopify-Topic"), "/"))
	},
}

// hubspotObjectType is the object of the subscription type: "deal" for
// "deal.propertyChange".
var hubspotObjectType = derivedSel{
	desc: "json:subscriptionType before '.'",
	from: config.SelectJSON,
	read: reads("json:subscriptionType"),
	fn: func(in *input) (string, error) {
		t, err := jsonValue(in.json.Get("subscriptionType"))
		if err != nil {
			return "", err
		}
		return nonEmpty(before(t, "."))
	},
}

// hubspotAction is the change of the subscription type, and for a property
// change the property: "propertyChange.dealstage", "creation". A deal's stage
// change and amount change at one instant are two events.
var hubspotAction = derivedSel{
	desc: "json:subscriptionType after '.', json:propertyName",
	from: config.SelectJSON,
	read: reads("json:subscriptionType", "json:propertyName"),
	fn: func(in *input) (string, error) {
		t, err := jsonValue(in.json.Get("subscriptionType"))
		if err != nil {
			return "", err
		}
		_, action, _ := strings.Cut(t, ".")
		if p, err := jsonValue(in.json.Get("propertyName")); err == nil {
			action += "." + p
		}
		return nonEmpty(action)
	},
}

// hubspotEntityType is the object type, and for a property change the
// property: "deal.dealstage". Each property is its own entity, whose state is
// the property's value, so that an older change of one property is not made
// stale by a newer change of another.
var hubspotEntityType = derivedSel{
	desc: "json:subscriptionType before '.', json:propertyName",
	from: config.SelectJSON,
	read: reads("json:subscriptionType", "json:propertyName"),
	fn: func(in *input) (string, error) {
		obj, err := hubspotObjectType.fn(in)
		if err != nil {
			return "", err
		}
		if p, err := jsonValue(in.json.Get("propertyName")); err == nil {
			obj += "." + p
		}
		return obj, nil
	},
}

// What the Salesforce preset's derived selectors read.
var (
	sfObjectType     = mustSel("xml:sObject/@type").sel
	sfVersions       = reads("xml:sObject/LastModifiedDate", "xml:sObject/SystemModstamp")
	sfOrganizationID = mustSel("xml:/Envelope/Body/notifications/OrganizationId").sel
)

// salesforceType is the sObject's type without its namespace prefix:
// "Opportunity" for xsi:type="sf:Opportunity".
var salesforceType = derivedSel{
	desc: "xml:sObject/@type without prefix",
	from: config.SelectXML,
	read: []config.Selector{sfObjectType},
	fn: func(in *input) (string, error) {
		t := xmlValue(in, sfObjectType)
		if _, local, ok := strings.Cut(t, ":"); ok {
			t = local
		}
		return nonEmpty(t)
	},
}

// salesforceVersion is the sObject's LastModifiedDate, or its
// SystemModstamp when the message does not carry the former.
var salesforceVersion = derivedSel{
	desc: "xml:sObject/LastModifiedDate, else xml:sObject/SystemModstamp",
	from: config.SelectXML,
	read: sfVersions,
	fn: func(in *input) (string, error) {
		for _, sel := range sfVersions {
			if v := xmlValue(in, sel); v != "" {
				return v, nil
			}
		}
		return "", ErrMissing
	},
}

// salesforceTenant is the organization in its 18-character form, the form
// the verifier compares: a 15- and an 18-character id of one organization
// are one tenant, so a notification sent with each is one event.
var salesforceTenant = derivedSel{
	desc: "xml:/Envelope/Body/notifications/OrganizationId (18-character form)",
	from: config.SelectXML,
	read: []config.Selector{sfOrganizationID},
	fn: func(in *input) (string, error) {
		v := xmlValue(in, sfOrganizationID)
		if v == "" {
			return "", ErrMissing
		}
		id, ok := verify.SalesforceID18(v)
		if !ok {
			return "", fmt.Errorf("%w: not a 15- or 18-character organization id", ErrMalformed)
		}
		return id, nil
	},
}

// reads parses a preset's selectors in config form.
func reads(sels ...string) []config.Selector {
	out := make([]config.Selector, len(sels))
	for i, s := range sels {
		out[i] = mustSel(s).sel
	}
	return out
}

// before returns s up to the first sep, or all of s.
func before(s, sep string) string {
	head, _, _ := strings.Cut(s, sep)
	return head
}

func nonEmpty(s string) (string, error) {
	if s == "" {
		return "", ErrMissing
	}
	return s, nil
}
