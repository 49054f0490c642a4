package source

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/verify"
)

// Namespaces of a Salesforce outbound message besides the envelope's and
// the message's own (see package verify).
const (
	// nsSObject is the namespace of an sObject's fields (the outbound
	// message WSDL imports them from the enterprise WSDL).
	nsSObject = "urn:sobject.enterprise.soap.sforce.com"
	// nsXSI is the namespace of xsi:type, the sObject's type.
	nsXSI = "http://www.w3.org/2001/XMLSchema-instance"
)

var (
	nameEnvelope      = xml.Name{Space: verify.NamespaceSOAPEnvelope, Local: "Envelope"}
	nameBody          = xml.Name{Space: verify.NamespaceSOAPEnvelope, Local: "Body"}
	nameNotifications = xml.Name{Space: verify.NamespaceSalesforceOutbound, Local: "notifications"}
	nameNotification  = xml.Name{Space: verify.NamespaceSalesforceOutbound, Local: "Notification"}
	nameSObject       = xml.Name{Space: verify.NamespaceSalesforceOutbound, Local: "sObject"}
)

// childSpace is the namespace of the children of an element called parent
// in an outbound message (the zero Name stands for the document, whose
// element is the Envelope). Selectors name elements by local name; an
// element of that local name in any other namespace is not the one the
// message defines, and reading it would let a look-alike such as
// <x:OrganizationId xmlns:x="urn:evil"> stand in for the real one.
func childSpace(parent xml.Name) string {
	switch {
	case parent == xml.Name{}:
		return verify.NamespaceSOAPEnvelope
	case parent == nameBody:
		return verify.NamespaceSalesforceOutbound
	case parent == nameSObject:
		return nsSObject
	}
	return parent.Space
}

// xmlWant is the part of an outbound message a source reads: the elements
// on the path of one of its selectors, and the attributes they read.
// Parsing keeps only these, so the tree of a message is as small as its
// notifications, however many other elements it carries.
type xmlWant struct {
	children map[xml.Name]*xmlWant
	attrs    []string // local names
	// many reports an element that repeats by design (Notification); any
	// other wanted element that appears twice in one parent is refused.
	many bool
}

// child returns the want of the child element called name; nil when the
// element is not read (or w is nil: nothing below it is).
func (w *xmlWant) child(name xml.Name) *xmlWant {
	if w == nil {
		return nil
	}
	return w.children[name]
}

// walk returns the want at path below w, whose element is called name,
// adding what is missing.
func (w *xmlWant) walk(name xml.Name, path ...string) *xmlWant {
	for _, local := range path {
		child := xml.Name{Space: childSpace(name), Local: local}
		next := w.children[child]
		if next == nil {
			next = &xmlWant{}
			if w.children == nil {
				w.children = map[xml.Name]*xmlWant{}
			}
			w.children[child] = next
		}
		w, name = next, child
	}
	return w
}

// newXMLWant returns what a source with sels reads of a message: its
// structure (Envelope/Body/notifications/OrganizationId and every
// Notification) and each XML selector's path.
func newXMLWant(sels []selector) *xmlWant {
	root := &xmlWant{}
	notifs := root.walk(xml.Name{}, "Envelope", "Body", "notifications")
	notifs.walk(nameNotifications, "OrganizationId")
	notification := notifs.walk(nameNotifications, "Notification")
	notification.many = true
	for _, sel := range sels {
		for _, r := range sel.reads() {
			if r.Kind != config.SelectXML {
				continue
			}
			w := notification.walk(nameNotification, r.Path...)
			if r.Absolute {
				w = root.walk(xml.Name{}, r.Path...)
			}
			if r.Attr != "" {
				w.attrs = append(w.attrs, r.Attr)
			}
		}
	}
	return root
}

// xmlNode is one kept element of a parsed XML body.
type xmlNode struct {
	name       xml.Name
	attrs      []xml.Attr
	text       []byte // the element's own character data, children's excluded
	children   []*xmlNode
	start, end int64 // the element's bytes in the body, start tag to end tag
}

// child returns the first kept child element called name.
func (n *xmlNode) child(name xml.Name) *xmlNode {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

// attr returns the value of the attribute called local, and how many there
// are: attributes match with no namespace or in the XML Schema instance
// namespace (xsi:type), never in another one.
func (n *xmlNode) attr(local string) (string, int) {
	var v string
	count := 0
	for _, a := range n.attrs {
		if a.Name.Local == local && (a.Name.Space == "" || a.Name.Space == nsXSI) {
			if count == 0 {
				v = a.Value
			}
			count++
		}
	}
	return v, count
}

// parseXML reads the elements of body that want names into a tree; the
// root is nil when the document element is not a SOAP Envelope. Like the
// Salesforce verifier, it refuses document type declarations, several root
// elements, nesting deeper than [verify.MaxSalesforceDepth] and more than
// [verify.MaxSalesforceElements] elements. A wanted element or attribute
// that appears twice is refused with [ErrDuplicateName]: which of the two
// counts would depend on the reader.
func parseXML(body []byte, want *xmlWant) (*xmlNode, error) {
	dec := xml.NewDecoder(bytes.NewReader(body))
	type frame struct {
		node *xmlNode // nil for an element that is not kept
		want *xmlWant
	}
	var (
		root            *xmlNode
		stack           []frame
		elements, roots int
	)
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: not well-formed XML", ErrMalformed)
		}
		switch t := tok.(type) {
		case xml.Directive:
			return nil, fmt.Errorf("%w: XML declarations (<!...>) are not accepted", ErrMalformed)
		case xml.StartElement:
			if elements++; elements > verify.MaxSalesforceElements {
				return nil, fmt.Errorf("%w: more than %d XML elements", ErrMalformed, verify.MaxSalesforceElements)
			}
			if len(stack) == verify.MaxSalesforceDepth {
				return nil, fmt.Errorf("%w: XML nested deeper than %d elements", ErrMalformed, verify.MaxSalesforceDepth)
			}
			parent := frame{want: want}
			if len(stack) > 0 {
				parent = stack[len(stack)-1]
			} else if roots++; roots > 1 {
				return nil, fmt.Errorf("%w: more than one XML root element", ErrMalformed)
			}
			var f frame
			if w := parent.want.child(t.Name); w != nil {
				n := &xmlNode{name: t.Name, attrs: t.Attr, start: start}
				switch {
				case parent.node == nil:
					root = n
				case !w.many && parent.node.child(t.Name) != nil:
					return nil, fmt.Errorf("%w: element %s appears twice in %s", ErrDuplicateName, t.Name.Local, parent.node.name.Local)
				default:
					parent.node.children = append(parent.node.children, n)
				}
				for _, a := range w.attrs {
					if _, count := n.attr(a); count > 1 {
						return nil, fmt.Errorf("%w: attribute %s appears twice on %s", ErrDuplicateName, a, t.Name.Local)
					}
				}
				f = frame{node: n, want: w}
			}
			stack = append(stack, f)
		case xml.EndElement:
			if top := stack[len(stack)-1].node; top != nil {
				top.end = dec.InputOffset()
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				if top := stack[len(stack)-1].node; top != nil {
					top.text = append(top.text, t...)
				}
			}
		}
	}
	if roots == 0 {
		return nil, fmt.Errorf("%w: no XML element", ErrMalformed)
	}
	return root, nil
}

// notifications returns the Notification elements of a Salesforce outbound
// message: Envelope/Body/notifications/Notification.
func notifications(root *xmlNode) ([]*xmlNode, error) {
	notAnOutboundMessage := fmt.Errorf("%w: want a Salesforce outbound message (soapenv:Envelope/Body/notifications)", ErrMalformed)
	if root == nil || root.name != nameEnvelope {
		return nil, notAnOutboundMessage
	}
	body := root.child(nameBody)
	if body == nil {
		return nil, notAnOutboundMessage
	}
	notifs := body.child(nameNotifications)
	if notifs == nil {
		return nil, notAnOutboundMessage
	}
	var list []*xmlNode
	for _, c := range notifs.children {
		if c.name == nameNotification {
			list = append(list, c)
		}
	}
	return list, nil
}
