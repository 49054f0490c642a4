package verify

import "testing"

// TestSalesforceChecksum uses the 15 -> 18 character conversions in
// github.com/sigmavirus24/salesforceid's tests (TestTo18).
func TestSalesforceChecksum(t *testing.T) {
	t.Parallel()
	for id15, want := range map[string]string{
		"00D000000000062": "00D000000000062EAA",
		"00d000000000062": "00d000000000062AAA",
		"003D0000001aH2A": "003D0000001aH2AIAU",
		"0A3D0000001aH2A": "0A3D0000001aH2AKAU",
		"000000000000000": "000000000000000AAA",
		"AAAAAAAAAAAAAAA": "AAAAAAAAAAAAAAA555",
		"zzzzzzzzzzzzzzz": "zzzzzzzzzzzzzzzAAA",
	} {
		if got, ok := SalesforceID18(id15); !ok || got != want {
			t.Errorf("SalesforceID18(%q) = %q, %v; want %q", id15, got, ok, want)
		}
		if got, ok := SalesforceID18(want); !ok || got != want {
			t.Errorf("SalesforceID18(%q) = %q, %v; want it unchanged", want, got, ok)
		}
	}
}

// TestHubSpotDecodeURI covers every entry of HubSpot's v3 decoding table
// (developers.hubspot.com, "Validating requests": %3A %2F %3F %40 %21 %24
// %27 %28 %29 %2A %2C %3B) and what must stay encoded.
func TestHubSpotDecodeURI(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                     "",
		"https://a.example/":                   "https://a.example/",
		"%3A%2F%3F%40%21%24%27%28%29%2A%2C%3B": ":/?@!$'()*,;",
		"%3a%2f%3f%21%2a%2c%3b":                ":/?!*,;",
		"%20%26%3D%25%2B%7E":                   "%20%26%3D%25%2B%7E",
		"%253A":                                "%253A", // one pass: %25 is not decoded, so nothing is decoded twice
		"%%3A":                                 "%:",
		"%3":                                   "%3",
		"a%":                                   "a%",
		"%3Z%2F":                               "%3Z/",
		"/p%C3%A9?q=%40":                       "/p%C3%A9?q=@",
	} {
		if got := hubSpotDecodeURI(in); got != want {
			t.Errorf("hubSpotDecodeURI(%q) = %q, want %q", in, got, want)
		}
	}
}
