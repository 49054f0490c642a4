package source

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestDuplicateName(t *testing.T) {
	t.Parallel()
	paths := func(sels ...string) []jsonPath {
		var fs []selector
		for _, s := range sels {
			fs = append(fs, mustSel(s))
		}
		return newJSONPaths(fs)
	}
	stripe := paths("json:id", "json:type", "json:data.object.id", "json:data.object.status", "json:a.1.b", "json:w.*.k")
	for _, tt := range []struct {
		body string
		want []string
	}{
		{`{"id":"evt_A","type":"t","data":{"object":{"id":"ch_1","status":"paid"}}}`, nil},
		{`{"id":"evt_A","id":"evt_B"}`, []string{"id"}},
		{` { "id" : "evt_A" , "id" : "evt_B" } `, []string{"id"}},
		{`{"id":"evt_A","\u0069d":"evt_B"}`, []string{"id"}},
		{`{"data":{"object":{"id":"ch_1"}},"data":{}}`, []string{"data"}},
		{`{"data":{"object":{"id":"ch_1"},"object":{}}}`, []string{"data", "object"}},
		{`{"data":{"object":{"id":"ch_1","status":"a","status":"b"}}}`, []string{"data", "object", "status"}},
		{`{"metadata":1,"metadata":2,"id":"x"}`, nil},
		{`{"x":{"id":1,"id":2},"id":"a","y":[{"id":1,"id":2}]}`, nil},
		{`{"s":"\"id\":1,\"id\":2","id":"a","t":"}{]["}`, nil},
		{`{"a":[{"b":1,"b":2},{"b":1}]}`, nil},
		{`{"a":[{"b":1},{"b":1,"b":2}]}`, []string{"a", "1", "b"}},
		{`{"a":[{"b":1}]}`, nil},
		{`{"data":"not an object","id":1}`, nil},
		{`[{"id":1,"id":2}]`, nil},
		{`{"w":{"*":{"k":1,"k":2}}}`, []string{"w", "*", "k"}},
		{`{"w":{"x":{"k":1,"k":2}}}`, nil},
	} {
		if got := duplicateName(tt.body, stripe); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.body, got, tt.want)
		}
	}
}

// TestJSONBodyRefused: a body whose JSON reads differently in different
// parsers is 400 after authentication: invalid UTF-8, or a member name
// twice on the path of any selector, the optional ones included.
func TestJSONBodyRefused(t *testing.T) {
	t.Parallel()
	stripe := newTestSource(t, presetConfig("stripe"))
	hubspot := newTestSource(t, presetConfig("hubspot"))
	event := `{"eventId":1,"subscriptionId":2,"portalId":3,"occurredAt":4,"objectId":5,"subscriptionType":"deal.creation"}`
	for _, tt := range []struct {
		name     string
		s        *Source
		body     string
		is       error
		index    int
		selector string
		msg      string
	}{
		{"two ids", stripe, `{"id":"evt_A","id":"evt_B"}`, ErrDuplicateName, 0, "json:id", "event 0: body: json:id: duplicate name"},
		{"an escaped second id", stripe, `{"id":"evt_A","\u0069d":"evt_B"}`, ErrDuplicateName, 0, "json:id", ""},
		{"two states (an entity field)", stripe, `{"id":"evt_A","data":{"object":{"status":"a","status":"b"}}}`,
			ErrDuplicateName, 0, "json:data.object.status", ""},
		{"hubspot second event's portal twice", hubspot, "[" + event + "," + strings.Replace(event, `"portalId":3`, `"portalId":3,"portalId":4`, 1) + "]",
			ErrDuplicateName, 1, "json:portalId", ""},
		{"invalid UTF-8", stripe, "{\"id\":\"evt_\xff\"}", ErrMalformed, -1, "", "body: malformed body: JSON that is not valid UTF-8"},
		{"truncated UTF-8", hubspot, "[" + strings.Replace(event, `"deal.creation"`, "\"deal.\xc3\"", 1) + "]", ErrMalformed, -1, "", ""},
	} {
		body := []byte(tt.body)
		events, err := tt.s.Events(newRequest("/in/x", body), body, "")
		var re *RequestError
		if events != nil || !errors.As(err, &re) || !errors.Is(err, tt.is) {
			t.Errorf("%s: %d events, %v; want %v", tt.name, len(events), err, tt.is)
			continue
		}
		if re.Index != tt.index || re.Part != "body" || re.Selector != tt.selector {
			t.Errorf("%s: {Index %d, Part %q, Selector %q}, want {%d, body, %q}", tt.name, re.Index, re.Part, re.Selector, tt.index, tt.selector)
		}
		if tt.msg != "" && err.Error() != tt.msg {
			t.Errorf("%s: message %q, want %q", tt.name, err, tt.msg)
		}
	}
	// A name repeated off every selector's path is the sender's business.
	body := []byte(`{"id":"evt_A","metadata":{"k":1,"k":2},"livemode":false,"livemode":true}`)
	if _, err := stripe.Events(newRequest("/in/x", body), body, ""); err != nil {
		t.Errorf("a repeated name no selector reads: %v", err)
	}
}
