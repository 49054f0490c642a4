package config

import (
	"fmt"
	"strings"
)

// SelectorKind names where a selector reads its value.
type SelectorKind string

// The selector kinds, as written before the colon.
const (
	// SelectHeader reads a request header: "header:X-Event-Id".
	SelectHeader SelectorKind = "header"
	// SelectJSON reads a field of the JSON body (of the array element for
	// batched providers): "json:data.object.id"; a numeric key indexes an array.
	SelectJSON SelectorKind = "json"
	// SelectQuery reads a URL query parameter: "query:account".
	SelectQuery SelectorKind = "query"
	// SelectConst is a fixed value: "const:billing".
	SelectConst SelectorKind = "const"
	// SelectXML reads an element's text or attribute from an XML body:
	// "xml:sObject/Id", "xml:sObject/@type". A relative path starts at the
	// event's element (Salesforce: Notification); a path starting with "/"
	// starts at the document root. Names match local names, so sObject/Id
	// matches <sf:Id>.
	SelectXML SelectorKind = "xml"
	// SelectPath is the tenant segment of the URL, /in/{source}/{tenant}.
	// Valid only as a tenant selector.
	SelectPath SelectorKind = "path"
)

// Selector says where one part of an event's key, tenant or entity is read.
type Selector struct {
	// Kind is where the value is read.
	Kind SelectorKind
	// Name is the header or query parameter name, or the constant value.
	Name string
	// Path is the JSON keys or XML element names, outermost first.
	Path []string
	// Attr is the attribute an XML selector reads; "" reads the element text.
	Attr string
	// Absolute reports that an XML path starts at the document root.
	Absolute bool
}

// ParseSelector reads a selector in its config form: "header:Name",
// "json:a.b.0.c", "query:name", "const:value", "xml:A/B", "xml:A/@attr",
// "xml:/Root/A" or "path". The error wraps [ErrSelector].
func ParseSelector(s string) (Selector, error) {
	if s == string(SelectPath) {
		return Selector{Kind: SelectPath}, nil
	}
	kind, arg, ok := strings.Cut(s, ":")
	if !ok {
		return Selector{}, fmt.Errorf("%w %q: want header:NAME, json:PATH, query:NAME, const:VALUE, xml:PATH or path", ErrSelector, s)
	}
	sel := Selector{Kind: SelectorKind(kind)}
	switch sel.Kind {
	case SelectHeader:
		if !validHeaderName(arg) {
			return Selector{}, fmt.Errorf("%w %q: not a valid header name", ErrSelector, s)
		}
		sel.Name = arg
	case SelectQuery:
		if arg == "" {
			return Selector{}, fmt.Errorf("%w %q: needs a parameter name", ErrSelector, s)
		}
		sel.Name = arg
	case SelectConst:
		sel.Name = arg
	case SelectJSON:
		sel.Path = strings.Split(arg, ".")
		for _, p := range sel.Path {
			if p == "" {
				return Selector{}, fmt.Errorf("%w %q: empty key in path (want a.b.0.c)", ErrSelector, s)
			}
		}
	case SelectXML:
		rest, abs := strings.CutPrefix(arg, "/")
		sel.Absolute = abs
		sel.Path = strings.Split(rest, "/")
		if last := sel.Path[len(sel.Path)-1]; strings.HasPrefix(last, "@") {
			sel.Attr = last[1:]
			sel.Path = sel.Path[:len(sel.Path)-1]
			if !validXMLName(sel.Attr) {
				return Selector{}, fmt.Errorf("%w %q: bad attribute name %q", ErrSelector, s, last)
			}
		}
		if abs && len(sel.Path) == 0 {
			return Selector{}, fmt.Errorf("%w %q: an absolute path needs an element", ErrSelector, s)
		}
		for _, p := range sel.Path {
			if !validXMLName(p) {
				return Selector{}, fmt.Errorf("%w %q: bad element name %q (want local names such as Notification/Id)", ErrSelector, s, p)
			}
		}
	default:
		return Selector{}, fmt.Errorf("%w %q: unknown kind %q (want header, json, query, const, xml or path)", ErrSelector, s, kind)
	}
	return sel, nil
}

// String returns the selector in its config form.
func (s Selector) String() string {
	switch s.Kind {
	case SelectPath:
		return string(SelectPath)
	case SelectJSON:
		return "json:" + strings.Join(s.Path, ".")
	case SelectXML:
		p := strings.Join(s.Path, "/")
		if s.Attr != "" {
			p = strings.TrimPrefix(p+"/@"+s.Attr, "/")
		}
		if s.Absolute {
			p = "/" + p
		}
		return "xml:" + p
	default:
		return string(s.Kind) + ":" + s.Name
	}
}

// validHeaderName reports whether name is an HTTP field name (RFC 9110 token).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isAlnum(c) && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// validXMLName reports whether name is a plain XML local name (ASCII letters,
// digits, '_', '-', '.'; not starting with a digit, '-' or '.').
func validXMLName(name string) bool {
	if name == "" || !isAlnum(name[0]) && name[0] != '_' || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; !isAlnum(c) && c != '_' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
