package source

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"

	"github.com/hookgate/hookgate/verify"
)

// xmlNode is one element of a parsed XML body.
type xmlNode struct {
	name       xml.Name
	attrs      []xml.Attr
	text       []byte // the element's own character data, children's excluded
	children   []*xmlNode
	start, end int64 // the element's bytes in the body, start tag to end tag
}

// child returns the first child element called local in namespace space
// ("" matches any namespace).
func (n *xmlNode) child(space, local string) *xmlNode {
	for _, c := range n.children {
		if c.name.Local == local && (space == "" || c.name.Space == space) {
			return c
		}
	}
	return nil
}

// attr returns the value of the first attribute with the local name local.
func (n *xmlNode) attr(local string) string {
	for _, a := range n.attrs {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// parseXML reads body into a tree. Like the Salesforce verifier, it refuses
// document type declarations, several root elements and nesting deeper than
// [verify.MaxSalesforceDepth].
func parseXML(body []byte) (*xmlNode, error) {
	dec := xml.NewDecoder(bytes.NewReader(body))
	var root *xmlNode
	var stack []*xmlNode
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
			if len(stack) == verify.MaxSalesforceDepth {
				return nil, fmt.Errorf("%w: XML nested deeper than %d elements", ErrMalformed, verify.MaxSalesforceDepth)
			}
			n := &xmlNode{name: t.Name, attrs: t.Attr, start: start}
			switch {
			case len(stack) > 0:
				parent := stack[len(stack)-1]
				parent.children = append(parent.children, n)
			case root != nil:
				return nil, fmt.Errorf("%w: more than one XML root element", ErrMalformed)
			default:
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack[len(stack)-1].end = dec.InputOffset()
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				top := stack[len(stack)-1]
				top.text = append(top.text, t...)
			}
		}
	}
	if root == nil {
		return nil, fmt.Errorf("%w: no XML element", ErrMalformed)
	}
	return root, nil
}

// notifications returns the Notification elements of a Salesforce outbound
// message: Envelope/Body/notifications/Notification.
func notifications(root *xmlNode) ([]*xmlNode, error) {
	notAnOutboundMessage := fmt.Errorf("%w: want a Salesforce outbound message (soapenv:Envelope/Body/notifications)", ErrMalformed)
	if root.name.Space != verify.NamespaceSOAPEnvelope || root.name.Local != "Envelope" {
		return nil, notAnOutboundMessage
	}
	body := root.child(verify.NamespaceSOAPEnvelope, "Body")
	if body == nil {
		return nil, notAnOutboundMessage
	}
	notifs := body.child(verify.NamespaceSalesforceOutbound, "notifications")
	if notifs == nil {
		return nil, notAnOutboundMessage
	}
	var list []*xmlNode
	for _, c := range notifs.children {
		if c.name.Space == verify.NamespaceSalesforceOutbound && c.name.Local == "Notification" {
			list = append(list, c)
		}
	}
	return list, nil
}
