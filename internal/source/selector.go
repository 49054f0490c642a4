package source

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/hookgate/hookgate/internal/config"
)

// input is what selectors read: one request, and one event within its body.
type input struct {
	r          *http.Request
	query      url.Values // parsed on first use
	pathTenant string
	json       gjson.Result // the event's JSON: the whole body or one array element
	xmlRoot    *xmlNode     // the document's root element
	xmlEvent   *xmlNode     // the event's element (Salesforce: Notification)
}

func (in *input) header(name string) string {
	if in.r == nil {
		return ""
	}
	return in.r.Header.Get(name)
}

func (in *input) queryValue(name string) string {
	if in.query == nil {
		in.query = url.Values{}
		if in.r != nil && in.r.URL != nil {
			in.query = in.r.URL.Query()
		}
	}
	return in.query.Get(name)
}

// selector reads one value of an event. It returns an error wrapping
// [ErrMissing] when the value is absent or empty, and [ErrNotScalar] when a
// JSON selector finds an object or array.
type selector interface {
	value(in *input) (string, error)
	// kind is where the selector reads, so that a source knows whether it
	// must parse the body as JSON.
	kind() config.SelectorKind
	// String is the selector in config form, for error messages.
	String() string
	// reads is every body field the selector reads, so that a source keeps
	// those elements of an XML body and checks those paths of a JSON body
	// for duplicate names.
	reads() []config.Selector
}

// fieldSel is a selector written in a configuration (or a preset, in the same
// syntax).
type fieldSel struct {
	sel      config.Selector
	jsonPath string // gjson path, each key escaped
}

func newFieldSel(s string) (fieldSel, error) {
	sel, err := config.ParseSelector(s)
	if err != nil {
		return fieldSel{}, err
	}
	f := fieldSel{sel: sel}
	if sel.Kind == config.SelectJSON {
		keys := make([]string, len(sel.Path))
		for i, k := range sel.Path {
			keys[i] = gjson.Escape(k)
		}
		f.jsonPath = strings.Join(keys, ".")
	}
	return f, nil
}

// mustSel compiles a preset's selector.
func mustSel(s string) fieldSel {
	f, err := newFieldSel(s)
	if err != nil {
		panic(fmt.Sprintf("source: preset selector %q: %v", s, err))
	}
	return f
}

func (f fieldSel) kind() config.SelectorKind { return f.sel.Kind }
func (f fieldSel) String() string            { return f.sel.String() }
func (f fieldSel) reads() []config.Selector  { return []config.Selector{f.sel} }

func (f fieldSel) value(in *input) (string, error) {
	var v string
	switch f.sel.Kind {
	case config.SelectHeader:
		v = in.header(f.sel.Name)
	case config.SelectQuery:
		v = in.queryValue(f.sel.Name)
	case config.SelectConst:
		v = f.sel.Name
	case config.SelectPath:
		v = in.pathTenant
	case config.SelectJSON:
		return jsonValue(in.json.Get(f.jsonPath))
	case config.SelectXML:
		v = xmlValue(in, f.sel)
	}
	if v == "" {
		return "", ErrMissing
	}
	return v, nil
}

// jsonValue turns a JSON scalar into text: a string's contents, a number as
// it was written, true or false.
func jsonValue(r gjson.Result) (string, error) {
	var v string
	switch r.Type {
	case gjson.String:
		v = r.Str
	case gjson.Number, gjson.True, gjson.False:
		v = r.Raw
	case gjson.JSON:
		return "", ErrNotScalar
	}
	if v == "" {
		return "", ErrMissing
	}
	return v, nil
}

// xmlValue reads an element's text or attribute below the event's element,
// or below the document root for an absolute path. Names match local names
// in the namespace the outbound message defines for that place (see
// childSpace); attributes match with no namespace or in xsi.
func xmlValue(in *input, sel config.Selector) string {
	n, path := in.xmlEvent, sel.Path
	if sel.Absolute {
		if in.xmlRoot == nil || in.xmlRoot.name != (xml.Name{Space: childSpace(xml.Name{}), Local: path[0]}) {
			return ""
		}
		n, path = in.xmlRoot, path[1:]
	}
	for _, local := range path {
		if n == nil {
			return ""
		}
		n = n.child(xml.Name{Space: childSpace(n.name), Local: local})
	}
	if n == nil {
		return ""
	}
	if sel.Attr != "" {
		v, _ := n.attr(sel.Attr)
		return v
	}
	return strings.TrimSpace(string(n.text))
}

// optional evaluates sel for a part that may be empty (scope, entity): no
// selector, a missing value or a non-scalar all give "".
func optional(sel selector, in *input) string {
	if sel == nil {
		return ""
	}
	v, err := sel.value(in)
	if err != nil {
		return ""
	}
	return v
}
