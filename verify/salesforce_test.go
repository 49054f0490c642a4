package verify_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/verify"
)

// Organization ids: 00D000000000062 is Salesforce's own org ("org62"); its
// 18-character form 00D000000000062EAA appears in Salesforce's SDK tests.
const (
	sfOrg18 = "00D000000000062EAA"
	sfOrg15 = "00D000000000062"
)

func sfBody(t *testing.T, org string) []byte {
	t.Helper()
	return bytes.Replace(salesforceFixture(t), []byte(sfOrg18), []byte(org), 1)
}

func TestSalesforceOrganizationID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		config, body string
		want         error
	}{
		{sfOrg18, sfOrg18, nil},
		{sfOrg18, sfOrg15, nil},
		{sfOrg15, sfOrg18, nil},
		{sfOrg15, sfOrg15, nil},
		{sfOrg18, "  " + sfOrg18 + "\n", nil},
		{sfOrg18, "00D000000000063EAA", verify.ErrMismatch},
		{sfOrg15, "00D000000000063", verify.ErrMismatch},
		{sfOrg15, "00d000000000062", verify.ErrMismatch},    // 15-character ids are case-sensitive
		{sfOrg15, "00D000000000062AAA", verify.ErrMismatch}, // wrong checksum
		{sfOrg18, "00D000000000062EA", verify.ErrMismatch},
		{sfOrg18, strings.Repeat("0", 200), verify.ErrMismatch},
		{sfOrg18, "", verify.ErrMismatch},
	} {
		v, err := verify.NewSalesforce(tc.config, "")
		if err != nil {
			t.Fatal(err)
		}
		err = v.Verify(post("https://hooks.example.com/in/salesforce"), sfBody(t, tc.body))
		if tc.want == nil {
			if err != nil {
				t.Errorf("config %s, body %q: %v", tc.config, tc.body, err)
			}
			continue
		}
		wantErr(t, err, tc.want, "salesforce")
	}
}

func TestSalesforceBody(t *testing.T) {
	t.Parallel()
	v, err := verify.NewSalesforce(sfOrg18, "")
	if err != nil {
		t.Fatal(err)
	}
	fixture := string(salesforceFixture(t))
	envelope := func(inner string) string {
		return `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>` + inner + `</soapenv:Body></soapenv:Envelope>`
	}
	notifications := `<notifications xmlns="http://soap.sforce.com/2005/09/outbound"><OrganizationId>` + sfOrg18 + `</OrganizationId></notifications>`
	for _, tc := range []struct {
		name, body string
		want       error
	}{
		{"minimal", envelope(notifications), nil},
		{"with a SOAP header", strings.Replace(envelope(notifications), "<soapenv:Body>", "<soapenv:Header/><soapenv:Body>", 1), nil},
		{"id split by a comment", envelope(strings.Replace(notifications, "062EAA", "062<!-- x -->EAA", 1)), nil},
		{"empty body", "", verify.ErrMalformed},
		{"not XML", "{\"OrganizationId\":\"" + sfOrg18 + "\"}", verify.ErrMalformed},
		{"truncated", fixture[:len(fixture)/2], verify.ErrMalformed},
		{"DOCTYPE", `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "` + sfOrg18 + `">]>` + envelope(strings.Replace(notifications, sfOrg18, "&a;", 1)), verify.ErrMalformed},
		{"harmless DOCTYPE", `<?xml version="1.0"?><!DOCTYPE Envelope>` + envelope(notifications), verify.ErrMalformed},
		{"undefined entity", envelope(strings.Replace(notifications, sfOrg18, "&a;", 1)), verify.ErrMalformed},
		{"wrong root", strings.ReplaceAll(envelope(notifications), "soapenv:Envelope", "soapenv:Letter"), verify.ErrMalformed},
		{"SOAP 1.2 namespace", strings.Replace(envelope(notifications), "http://schemas.xmlsoap.org/soap/envelope/", "http://www.w3.org/2003/05/soap-envelope", 1), verify.ErrMalformed},
		{"two roots", envelope(notifications) + envelope(notifications), verify.ErrMalformed},
		{"two bodies", strings.Replace(envelope(notifications), "</soapenv:Body>", "</soapenv:Body><soapenv:Body/>", 1), verify.ErrMalformed},
		{"two notifications", envelope(notifications + notifications), verify.ErrMalformed},
		{"two OrganizationIds", envelope(strings.Replace(notifications, "</notifications>", "<OrganizationId>00D000000000063EAA</OrganizationId></notifications>", 1)), verify.ErrMalformed},
		{"element inside OrganizationId", envelope(strings.Replace(notifications, sfOrg18, "<b>"+sfOrg18+"</b>", 1)), verify.ErrMalformed},
		{"too deep", envelope(notifications + strings.Repeat("<a>", 70) + strings.Repeat("</a>", 70)), verify.ErrMalformed},
		{"as many elements as allowed", envelope(strings.Replace(notifications, "</notifications>",
			strings.Repeat("<a/>", verify.MaxSalesforceElements-4)+"</notifications>", 1)), nil},
		{"too many elements", envelope(strings.Replace(notifications, "</notifications>",
			strings.Repeat("<a/>", verify.MaxSalesforceElements-3)+"</notifications>", 1)), verify.ErrMalformed},
		{"look-alike OrganizationId before the real one", envelope(strings.Replace(notifications, "<OrganizationId>",
			`<x:OrganizationId xmlns:x="urn:evil">00D000000000063EAA</x:OrganizationId><OrganizationId>`, 1)), nil},
		{"look-alike OrganizationId of the right organization", envelope(strings.Replace(strings.Replace(notifications, sfOrg18, "00D000000000063EAA", 1),
			"<OrganizationId>", `<x:OrganizationId xmlns:x="urn:evil">`+sfOrg18+`</x:OrganizationId><OrganizationId>`, 1)), verify.ErrMismatch},
		{"too large", envelope(notifications + "<pad>" + strings.Repeat("x", verify.MaxSalesforceBody) + "</pad>"), verify.ErrMalformed},
		{"no notifications", envelope(""), verify.ErrMissing},
		{"no OrganizationId", envelope(`<notifications xmlns="http://soap.sforce.com/2005/09/outbound"/>`), verify.ErrMissing},
		{"OrganizationId in another namespace", envelope(strings.ReplaceAll(notifications, "http://soap.sforce.com/2005/09/outbound", "urn:other")), verify.ErrMissing},
		{"OrganizationId outside notifications", envelope(`<OrganizationId>` + sfOrg18 + `</OrganizationId>`), verify.ErrMissing},
	} {
		err := v.Verify(post("https://hooks.example.com/in/salesforce"), []byte(tc.body))
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !knownErr(err) {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		wantErr(t, err, tc.want, "salesforce")
	}
}

func TestSalesforceToken(t *testing.T) {
	t.Parallel()
	const token = "sf-3f9a0c"
	v, err := verify.NewSalesforce(sfOrg15, token)
	if err != nil {
		t.Fatal(err)
	}
	body := salesforceFixture(t)
	if err := v.Verify(post("https://hooks.example.com/in/salesforce?token="+token), body); err != nil {
		t.Fatal(err)
	}
	wantErr(t, v.Verify(post("https://hooks.example.com/in/salesforce?token=sf-3f9a0d"), body), verify.ErrMismatch, "salesforce", token)
	wantErr(t, v.Verify(post("https://hooks.example.com/in/salesforce"), body), verify.ErrMissing, "salesforce", token)
	// The token is checked before the body is parsed.
	wantErr(t, v.Verify(post("https://hooks.example.com/in/salesforce"), []byte("<not xml")), verify.ErrMissing, "salesforce", token)

	r := post("https://hooks.example.com/in/salesforce")
	if err := v.Sign(r, body); err != nil || r.URL.Query().Get("token") != token {
		t.Fatalf("Sign: %q, %v", r.URL.RawQuery, err)
	}
	wantErr(t, v.Sign(post("https://hooks.example.com/"), sfBody(t, "00D000000000063EAA")), verify.ErrMismatch, "salesforce", token)
}

func TestSalesforceConfig(t *testing.T) {
	t.Parallel()
	for _, id := range []string{
		"",
		"00D00000000006",      // 14 characters
		"00D000000000062EA",   // 17
		"00D000000000062EAB",  // wrong checksum
		"00D000000000062eaa",  // checksum in the wrong case
		"001000000000001AAA",  // an Account id, not an organization
		"00D00000000006-",     // not alphanumeric
		"00D000000000062EAA ", // trailing space
	} {
		_, err := verify.NewSalesforce(id, "tok")
		wantErr(t, err, verify.ErrConfig, "salesforce")
	}
}
