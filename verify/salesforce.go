package verify

import (
	"bytes"
	"crypto/subtle"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// XML namespaces of a Salesforce outbound message.
const (
	// NamespaceSOAPEnvelope is the SOAP 1.1 namespace of Envelope and Body.
	NamespaceSOAPEnvelope = "http://schemas.xmlsoap.org/soap/envelope/"
	// NamespaceSalesforceOutbound is the namespace of notifications and
	// OrganizationId.
	NamespaceSalesforceOutbound = "http://soap.sforce.com/2005/09/outbound"
)

// Limits on the outbound messages Salesforce verifies.
const (
	// MaxSalesforceBody is the largest body a Salesforce verifier parses.
	MaxSalesforceBody = 16 << 20
	// MaxSalesforceDepth is the deepest element nesting it parses.
	MaxSalesforceDepth = 64
	// MaxSalesforceElements is the most elements it parses. Without a token
	// anyone who knows the organization id (it is not a secret) reaches the
	// parser, and an XML parser allocates per element: a 1 MiB body of empty
	// elements would otherwise cost about 50 MB. 32,768 is a full batch of
	// 100 notifications with over 300 fields each, more than fits in the
	// default 1 MiB body limit.
	MaxSalesforceElements = 1 << 15
)

// Salesforce verifies Salesforce outbound messages. Salesforce does not
// sign them; what a receiver can check is that the SOAP body's
// Envelope/Body/notifications/OrganizationId is the expected organization
// and, when configured, that the ?token= query parameter carries a secret
// token added to the endpoint URL.
//
// Organization ids compare in their 18-character form: a 15-character id
// on either side is extended with its checksum suffix. The body is parsed
// with encoding/xml; a document type declaration, more than one Envelope,
// Body, notifications or OrganizationId, nesting deeper than
// [MaxSalesforceDepth], more than [MaxSalesforceElements] elements or a body
// over [MaxSalesforceBody] is malformed. Only elements in the SOAP envelope
// and outbound-message namespaces count: an OrganizationId in another
// namespace is not the organization.
type Salesforce struct {
	orgID string // 18-character form
	token *token
}

var (
	_ Verifier = (*Salesforce)(nil)
	_ Signer   = (*Salesforce)(nil)
)

const schemeSalesforce = "salesforce"

// NewSalesforce returns a Salesforce verifier. organizationID is required:
// a 15- or 18-character organization id ("00D..."); an 18-character id must
// carry its correct checksum suffix. token is optional. opts are validated;
// none of them applies.
func NewSalesforce(organizationID, token string, opts ...Option) (*Salesforce, error) {
	if _, err := buildOptions(schemeSalesforce, opts); err != nil {
		return nil, err
	}
	id, ok := SalesforceID18(organizationID)
	if !ok || !strings.HasPrefix(id, "00D") {
		return nil, fail(schemeSalesforce, "organization id", ErrConfig)
	}
	return &Salesforce{orgID: id, token: newToken(token)}, nil
}

// Verify checks the token, when configured, then the OrganizationId.
func (s *Salesforce) Verify(r *http.Request, body []byte) error {
	if s.orgID == "" {
		return fail(schemeSalesforce, "organization id", ErrConfig)
	}
	if s.token != nil {
		if err := s.token.check(r, schemeSalesforce); err != nil {
			return err
		}
	}
	return s.checkOrg(body)
}

// Sign sets the ?token= parameter when a token is configured. Salesforce
// messages carry no signature, so Sign only checks that body names the
// configured organization and returns Verify's error when it does not.
func (s *Salesforce) Sign(r *http.Request, body []byte) error {
	if s.orgID == "" {
		return fail(schemeSalesforce, "organization id", ErrConfig)
	}
	if err := s.checkOrg(body); err != nil {
		return err
	}
	if s.token != nil {
		return s.token.set(r, schemeSalesforce)
	}
	return nil
}

func (s *Salesforce) checkOrg(body []byte) error {
	got, err := salesforceOrgID(body)
	if err != nil {
		return err
	}
	id, ok := SalesforceID18(got)
	if !ok || subtle.ConstantTimeCompare([]byte(id), []byte(s.orgID)) != 1 {
		return fail(schemeSalesforce, "OrganizationId", ErrMismatch)
	}
	return nil
}

var (
	nameEnvelope      = xml.Name{Space: NamespaceSOAPEnvelope, Local: "Envelope"}
	nameBody          = xml.Name{Space: NamespaceSOAPEnvelope, Local: "Body"}
	nameNotifications = xml.Name{Space: NamespaceSalesforceOutbound, Local: "notifications"}
	nameOrgID         = xml.Name{Space: NamespaceSalesforceOutbound, Local: "OrganizationId"}
)

// maxOrgIDText bounds the OrganizationId text the parser keeps.
const maxOrgIDText = 64

// salesforceOrgID returns the text of the one
// Envelope/Body/notifications/OrganizationId element of an outbound message.
func salesforceOrgID(body []byte) (string, error) {
	malformed := fail(schemeSalesforce, "body", ErrMalformed)
	if len(body) > MaxSalesforceBody {
		return "", malformed
	}
	dec := xml.NewDecoder(bytes.NewReader(body))
	var (
		path                                    []xml.Name
		org                                     []byte
		elements, roots, bodies, notifs, orgIDs int
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", malformed
		}
		switch t := tok.(type) {
		case xml.Directive:
			return "", malformed
		case xml.StartElement:
			if elements++; elements > MaxSalesforceElements {
				return "", fail(schemeSalesforce, fmt.Sprintf("body (more than %d elements)", MaxSalesforceElements), ErrMalformed)
			}
			if len(path) == MaxSalesforceDepth {
				return "", fail(schemeSalesforce, fmt.Sprintf("body (nested deeper than %d elements)", MaxSalesforceDepth), ErrMalformed)
			}
			if len(path) == 4 && path[3] == nameOrgID {
				return "", malformed
			}
			path = append(path, t.Name)
			switch {
			case len(path) == 1:
				roots++
				if t.Name != nameEnvelope {
					return "", malformed
				}
			case len(path) == 2 && t.Name == nameBody:
				bodies++
			case len(path) == 3 && path[1] == nameBody && t.Name == nameNotifications:
				notifs++
			case len(path) == 4 && path[1] == nameBody && path[2] == nameNotifications && t.Name == nameOrgID:
				orgIDs++
			}
		case xml.EndElement:
			path = path[:len(path)-1]
		case xml.CharData:
			if len(path) == 4 && path[3] == nameOrgID && path[2] == nameNotifications && path[1] == nameBody {
				if len(org)+len(t) > maxOrgIDText {
					return "", fail(schemeSalesforce, "OrganizationId", ErrMismatch)
				}
				org = append(org, t...)
			}
		}
	}
	switch {
	case roots != 1 || bodies > 1 || notifs > 1 || orgIDs > 1:
		return "", malformed
	case orgIDs == 0:
		return "", fail(schemeSalesforce, "OrganizationId", ErrMissing)
	}
	return strings.TrimSpace(string(org)), nil
}

// SalesforceID18 returns the 18-character form of a 15- or 18-character
// Salesforce id, and false when id is neither or its checksum is wrong. The
// two forms name one record (or organization); the 18-character one is the
// one to store, because it also compares equal case-insensitively.
func SalesforceID18(id string) (string, bool) {
	if len(id) != 15 && len(id) != 18 {
		return "", false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return "", false
		}
	}
	sum := salesforceChecksum(id[:15])
	if len(id) == 18 && id[15:] != sum {
		return "", false
	}
	return id[:15] + sum, true
}

// salesforceChecksum is the 3-character suffix that makes a 15-character
// case-sensitive id an 18-character one: for each 5-character chunk, the
// bit pattern of its upper-case letters (first character lowest) indexes
// "A..Z0..5".
func salesforceChecksum(id15 string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
	var out [3]byte
	for chunk := range out {
		n := 0
		for i := range 5 {
			if c := id15[chunk*5+i]; 'A' <= c && c <= 'Z' {
				n |= 1 << i
			}
		}
		out[chunk] = alphabet[n]
	}
	return string(out[:])
}
