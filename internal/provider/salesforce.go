package provider

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hookgate/hookgate/verify"
)

// Salesforce outbound messages are SOAP, signed by nothing: the
// organization id must match, and a ?token= when one is set. The sender
// needs a SOAP Ack.
const Salesforce = "salesforce"

func init() {
	register(&Provider{
		Name:           Salesforce,
		rank:           60,
		Secret:         Refused,
		SecretNote:     "it checks organization_id and token",
		Token:          true,
		OrganizationID: checkOrganizationID,
		NewScheme: func(c Credentials, _ string, opts ...verify.Option) (verify.Scheme, error) {
			return verify.NewSalesforce(c.OrganizationID, c.Token, opts...)
		},
		Preset: Preset{
			Body:   BodySOAP,
			Key:    []Selector{Field("xml:Id")},
			Tenant: Selector{Derived: salesforceTenant},
			Entity: EntitySelectors{
				Type:    Selector{Derived: salesforceType},
				ID:      Field("xml:sObject/Id"),
				Version: Selector{Derived: salesforceVersion},
			},
			Headers: []string{"Soapaction"},
		},
		Answer: writeSOAP,
		Warn: func(c Credentials) string {
			if c.Token != "" {
				return ""
			}
			// Salesforce signs nothing: without a token, anyone who knows the
			// organization id can post messages, and each costs an XML parse.
			return "salesforce source without a token: anyone who knows the organization id can post to it"
		},
		Unauthorized: "the gateway's source wants another organization id or token than the config gives",
		Notes: Notes{
			Signed: "nothing: the organization id must match, and ?token= when set",
			Key:    "xml:Notification/Id",
			Tenant: "xml:OrganizationId",
		},
		ContentType: "text/xml; charset=utf-8",
		Headers: func(string, string, time.Time) http.Header {
			// Outbound messages carry an empty SOAP action.
			return http.Header{"Soapaction": {`""`}}
		},
		Examples: []Example{
			{"Opportunity", "Opportunity.xml", "an outbound message: an opportunity was won"},
			{"Lead", "Lead.xml", "an outbound message: a lead came in from the web"},
		},
	})
}

// checkOrganizationID accepts a 15 or 18 character organization id.
func checkOrganizationID(id string) error {
	ok := (len(id) == 15 || len(id) == 18) && strings.HasPrefix(id, "00D")
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	if !ok {
		return fmt.Errorf("%q: want the 15 or 18 character id (00D...)", id)
	}
	return nil
}

// What the Salesforce preset's derived selectors read.
const (
	sfObjectType     = "xml:sObject/@type"
	sfOrganizationID = "xml:/Envelope/Body/notifications/OrganizationId"
)

var sfVersions = []string{"xml:sObject/LastModifiedDate", "xml:sObject/SystemModstamp"}

// salesforceType is the sObject's type without its namespace prefix:
// "Opportunity" for xsi:type="sf:Opportunity".
var salesforceType = &Derived{
	Desc:  "xml:sObject/@type without prefix",
	Reads: []string{sfObjectType},
	Value: func(e Event) (string, error) {
		t, err := e.Read(sfObjectType)
		if err != nil {
			return "", err
		}
		if _, local, ok := strings.Cut(t, ":"); ok {
			t = local
		}
		return nonEmpty(t)
	},
}

// salesforceVersion is the sObject's LastModifiedDate, or its
// SystemModstamp when the message does not carry the former.
var salesforceVersion = &Derived{
	Desc:  "xml:sObject/LastModifiedDate, else xml:sObject/SystemModstamp",
	Reads: sfVersions,
	Value: func(e Event) (string, error) {
		for _, sel := range sfVersions {
			if v, err := e.Read(sel); err == nil {
				return v, nil
			}
		}
		return "", ErrMissing
	},
}

// salesforceTenant is the organization in its 18-character form, the form
// the verifier compares: a 15- and an 18-character id of one organization
// are one tenant, so a notification sent with each is one event.
var salesforceTenant = &Derived{
	Desc:  "xml:/Envelope/Body/notifications/OrganizationId (18-character form)",
	Reads: []string{sfOrganizationID},
	Value: func(e Event) (string, error) {
		v, err := e.Read(sfOrganizationID)
		if err != nil {
			return "", err
		}
		id, ok := verify.SalesforceID18(v)
		if !ok {
			return "", fmt.Errorf("%w: not a 15- or 18-character organization id", ErrMalformed)
		}
		return id, nil
	},
}

// soapAck is what Salesforce outbound messaging retries for 24 hours
// until it receives; anything else (including a SOAP fault) means "retry".
const soapAck = `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">
 <soapenv:Body>
  <notificationsResponse xmlns="http://soap.sforce.com/2005/09/outbound">
   <Ack>true</Ack>
  </notificationsResponse>
 </soapenv:Body>
</soapenv:Envelope>
`

// writeSOAP answers an outbound message: the Ack for a stored or
// duplicate message, a SOAP fault otherwise (Client for what the sender got
// wrong, Server for what it should retry).
func writeSOAP(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	if status < 300 {
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(soapAck))
		return
	}
	code := "soapenv:Client"
	if status >= 500 || status == http.StatusConflict {
		code = "soapenv:Server"
	}
	w.WriteHeader(status)
	w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">
 <soapenv:Body>
  <soapenv:Fault>
   <faultcode>` + code + `</faultcode>
   <faultstring>`))
	xml.EscapeText(w, []byte(message))
	w.Write([]byte(`</faultstring>
  </soapenv:Fault>
 </soapenv:Body>
</soapenv:Envelope>
`))
}
