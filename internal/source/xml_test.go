package source

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/verify"
)

// outbound is a Salesforce outbound message of org carrying notifications.
func outbound(org, notifications string) []byte {
	return []byte(`<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>` +
		`<notifications xmlns="http://soap.sforce.com/2005/09/outbound"><OrganizationId>` + org + `</OrganizationId>` +
		notifications + `</notifications></soapenv:Body></soapenv:Envelope>`)
}

// sfNote is one Notification of an Opportunity.
const sfNote = `<Notification><Id>04l5e00000AbC1AAAV</Id>` +
	`<sObject xsi:type="sf:Opportunity" xmlns:sf="urn:sobject.enterprise.soap.sforce.com">` +
	`<sf:Id>0065e00000QwErTAAZ</sf:Id><sf:LastModifiedDate>2026-12-01T10:15:02.000Z</sf:LastModifiedDate></sObject></Notification>`

// TestSalesforceTenantIsTheOrganization: the tenant is the organization the
// verifier accepted, in its 18-character form, so the 15- and 18-character
// forms of one organization key one notification alike.
func TestSalesforceTenantIsTheOrganization(t *testing.T) {
	t.Parallel()
	s := newTestSource(t, presetConfig("salesforce"))
	org15 := testOrg[:15]
	var first *Event
	for _, org := range []string{testOrg, org15, " " + org15 + "\n"} {
		body := outbound(org, sfNote)
		r := newRequest("/in/sf", body)
		if _, err := s.Authenticate(r, body); err != nil {
			t.Fatalf("org %q: Authenticate: %v", org, err)
		}
		events, err := s.Events(r, body, "")
		if err != nil {
			t.Fatalf("org %q: Events: %v", org, err)
		}
		if events[0].Tenant != testOrg {
			t.Errorf("org %q: tenant %q, want %q", org, events[0].Tenant, testOrg)
		}
		if first == nil {
			first = &events[0]
		} else if events[0].Hash != first.Hash {
			t.Errorf("org %q: the notification's key differs from the one sent with %q", org, testOrg)
		}
	}
}

// TestSalesforceLookAlikes: elements with the local names of the outbound
// message in another namespace are ignored, wherever they stand, so a
// look-alike placed first neither becomes the tenant, nor the event id, nor
// an event, nor the entity.
func TestSalesforceLookAlikes(t *testing.T) {
	t.Parallel()
	s := newTestSource(t, presetConfig("salesforce"))
	note := strings.NewReplacer(
		`<Id>`, `<x:Id xmlns:x="urn:evil">evil-note</x:Id><Id>`,
		`<sf:Id>`, `<x:Id xmlns:x="urn:evil">evil-object</x:Id><sf:Id>`,
		`<sf:LastModifiedDate>`, `<LastModifiedDate>2030-01-01T00:00:00Z</LastModifiedDate><sf:LastModifiedDate>`,
		`xsi:type=`, `x:type="x:Evil" xmlns:x="urn:evil" xsi:type=`,
	).Replace(sfNote)
	body := outbound(testOrg, `<x:Notification xmlns:x="urn:evil"><Id>evil</Id></x:Notification>`+note)
	body = []byte(strings.Replace(string(body), `<OrganizationId>`,
		`<x:OrganizationId xmlns:x="urn:evil">00D5e000000ZzZzEAK</x:OrganizationId><OrganizationId>`, 1))
	r := newRequest("/in/sf", body)
	if _, err := s.Authenticate(r, body); err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	events, err := s.Events(r, body, "")
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	if len(events) != 1 {
		t.Fatalf("got %d events, want 1 (the look-alike Notification is not one)", len(events))
	}
	want := Entity{Type: "Opportunity", ID: "0065e00000QwErTAAZ", Version: "2026-12-01T10:15:02.000Z",
		Order: nanos(t, "2026-12-01T10:15:02Z")}
	if ev := events[0]; ev.Tenant != testOrg || ev.EventID != "04l5e00000AbC1AAAV" || ev.Entity != want {
		t.Errorf("tenant %q, event id %q, entity %+v; want %q, 04l5e00000AbC1AAAV, %+v", ev.Tenant, ev.EventID, ev.Entity, testOrg, want)
	}

	// A message whose only OrganizationId is a look-alike has none.
	body = []byte(strings.Replace(string(outbound(testOrg, sfNote)), `<OrganizationId>`+testOrg+`</OrganizationId>`,
		`<x:OrganizationId xmlns:x="urn:evil">`+testOrg+`</x:OrganizationId>`, 1))
	if _, err := s.Authenticate(newRequest("/in/sf", body), body); !errors.Is(err, verify.ErrMissing) {
		t.Errorf("only a look-alike OrganizationId: Authenticate = %v, want ErrMissing", err)
	}
	if _, err := s.Events(newRequest("/in/sf", body), body, ""); !errors.Is(err, ErrMissing) {
		t.Errorf("only a look-alike OrganizationId: Events = %v, want ErrMissing", err)
	}
}

// TestSalesforceDuplicateNames: an element or attribute a selector reads
// that appears twice is refused, since readers disagree on which counts.
func TestSalesforceDuplicateNames(t *testing.T) {
	t.Parallel()
	s := newTestSource(t, presetConfig("salesforce"))
	for name, note := range map[string]string{
		"notification id": strings.Replace(sfNote, `<sObject`, `<Id>04l5e00000AbC9AAAV</Id><sObject`, 1),
		"version":         strings.Replace(sfNote, `</sObject>`, `<sf:LastModifiedDate>2030-01-01T00:00:00Z</sf:LastModifiedDate></sObject>`, 1),
		"sObject":         strings.Replace(sfNote, `</Notification>`, `<sObject/></Notification>`, 1),
		"type attribute":  strings.Replace(sfNote, `xsi:type=`, `type="sf:Account" xsi:type=`, 1),
		"OrganizationId":  strings.Replace(sfNote, `<Notification>`, `<OrganizationId>`+testOrg+`</OrganizationId><Notification>`, 1),
	} {
		body := outbound(testOrg, note)
		_, err := s.Events(newRequest("/in/sf", body), body, "")
		if !errors.Is(err, ErrDuplicateName) {
			t.Errorf("%s twice: %v, want ErrDuplicateName", name, err)
		}
	}
	// Elements no selector reads may repeat.
	body := outbound(testOrg, strings.Replace(sfNote, `</sObject>`, `<sf:Amount>1</sf:Amount><sf:Amount>2</sf:Amount></sObject>`, 1))
	if _, err := s.Events(newRequest("/in/sf", body), body, ""); err != nil {
		t.Errorf("an unread field twice: %v", err)
	}
}

// TestSalesforceElementBound: the parse stops at the element limit, and what
// it keeps of a message is what the selectors read, however many other
// elements it carries.
func TestSalesforceElementBound(t *testing.T) {
	t.Parallel()
	s := newTestSource(t, presetConfig("salesforce"))
	fill := func(n int) []byte {
		return outbound(testOrg, strings.Replace(sfNote, `</sObject>`, strings.Repeat(`<a/>`, n)+`</sObject>`, 1))
	}
	const structure = 9 // Envelope, Body, notifications, OrganizationId, Notification, Id, sObject, sf:Id, sf:LastModifiedDate
	body := fill(verify.MaxSalesforceElements - structure)
	root, err := parseXML(body, s.xmlWant)
	if err != nil {
		t.Fatalf("a message of %d elements: %v", verify.MaxSalesforceElements, err)
	}
	kept := 0
	var count func(*xmlNode)
	count = func(n *xmlNode) {
		kept++
		for _, c := range n.children {
			count(c)
		}
	}
	count(root)
	if kept != structure {
		t.Errorf("kept %d elements, want the %d the selectors read", kept, structure)
	}
	body = fill(verify.MaxSalesforceElements - structure + 1)
	if _, err := s.Events(newRequest("/in/sf", body), body, ""); !errors.Is(err, ErrMalformed) ||
		!strings.Contains(err.Error(), "more than 32768 XML elements") {
		t.Errorf("one element more: %v, want ErrMalformed naming the limit", err)
	}
}
