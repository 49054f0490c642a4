package config

import (
	"errors"
	"slices"
	"testing"
)

func TestParseSelector(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Selector
	}{
		{"path", Selector{Kind: SelectPath}},
		{"header:X-Event-Id", Selector{Kind: SelectHeader, Name: "X-Event-Id"}},
		{"query:account", Selector{Kind: SelectQuery, Name: "account"}},
		{"const:billing", Selector{Kind: SelectConst, Name: "billing"}},
		{"const:a:b", Selector{Kind: SelectConst, Name: "a:b"}},
		{"const:", Selector{Kind: SelectConst}},
		{"json:id", Selector{Kind: SelectJSON, Path: []string{"id"}}},
		{"json:data.object.0.id", Selector{Kind: SelectJSON, Path: []string{"data", "object", "0", "id"}}},
		{"json:a*b.@c", Selector{Kind: SelectJSON, Path: []string{"a*b", "@c"}}},
		{"xml:Id", Selector{Kind: SelectXML, Path: []string{"Id"}}},
		{"xml:sObject/Id", Selector{Kind: SelectXML, Path: []string{"sObject", "Id"}}},
		{"xml:sObject/@type", Selector{Kind: SelectXML, Path: []string{"sObject"}, Attr: "type"}},
		{"xml:@type", Selector{Kind: SelectXML, Path: []string{}, Attr: "type"}},
		{"xml:/Envelope/Body/notifications/OrganizationId", Selector{Kind: SelectXML, Absolute: true,
			Path: []string{"Envelope", "Body", "notifications", "OrganizationId"}}},
	}
	for _, tt := range tests {
		got, err := ParseSelector(tt.in)
		if err != nil {
			t.Errorf("ParseSelector(%q): %v", tt.in, err)
			continue
		}
		if got.Kind != tt.want.Kind || got.Name != tt.want.Name || !slices.Equal(got.Path, tt.want.Path) ||
			got.Attr != tt.want.Attr || got.Absolute != tt.want.Absolute {
			t.Errorf("ParseSelector(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if got.String() != tt.in {
			t.Errorf("ParseSelector(%q).String() = %q", tt.in, got.String())
		}
	}
	for _, bad := range []string{
		"", "id", "paths", "body:id", "header:", "header:X Event", "header:X:Y", "query:",
		"json:", "json:.a", "json:a.", "json:a..b", "xml:", "xml:/", "xml:/@type", "xml:a//b",
		"xml:sf:Id", "xml:1a", "xml:a/@", "xml:a/@b/c", "xml:a b",
	} {
		if got, err := ParseSelector(bad); !errors.Is(err, ErrSelector) {
			t.Errorf("ParseSelector(%q) = %+v, %v; want ErrSelector", bad, got, err)
		}
	}
}
