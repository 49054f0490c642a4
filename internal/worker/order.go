package worker

import (
	"net/textproto"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
)

// Order values of a destination.
const (
	// OrderEntity: the destination's deliveries of one key go one at a
	// time, in entity version order (inbox id for ties), on every node.
	OrderEntity = config.OrderEntity
)

// OnExhausted values of an ordered destination.
const (
	// OnExhaustedSkip: a delivery that fails for good is dead and its key
	// moves on; the key's next delivery says how many were skipped.
	OnExhaustedSkip = config.OnExhaustedSkip
	// OnExhaustedBlock: a delivery that fails for good holds its key
	// until an operator replays the event.
	OnExhaustedBlock = config.OnExhaustedBlock
)

// ordered reports whether d keeps per-key order.
func (d Destination) ordered() bool { return d.Order == OrderEntity }

// orderSelector parses d's OrderKey; the zero Selector when it has none.
func (d Destination) orderSelector() (config.Selector, error) {
	if d.OrderKey == "" {
		return config.Selector{}, nil
	}
	return config.ParseSelector(d.OrderKey)
}

// orderKey is ev's key on an ordered destination reading sel: the
// selected value within the event's tenant, or, when sel is unset or
// finds nothing, the entity (tenant/type/id), or the event's key for an
// event without one.
func orderKey(ev *inbox.Event, sel config.Selector) string {
	var v string
	switch sel.Kind {
	case config.SelectJSON:
		r := gjson.GetBytes(ev.Payload, jsonPath(sel.Path))
		if r.Exists() && r.Type != gjson.Null {
			v = r.String()
		}
	case config.SelectHeader:
		v = ev.Headers[textproto.CanonicalMIMEHeaderKey(sel.Name)]
	case config.SelectConst:
		v = sel.Name
	}
	if v != "" {
		return ev.Tenant + "/" + v
	}
	if ev.EntityID != "" {
		return ev.Tenant + "/" + ev.EntityType + "/" + ev.EntityID
	}
	return ev.Hash.String()
}

// jsonPath is a selector's JSON path in gjson's syntax.
func jsonPath(keys []string) string {
	esc := make([]string, len(keys))
	for i, k := range keys {
		esc[i] = gjson.Escape(k)
	}
	return strings.Join(esc, ".")
}

// withOrder adds an ordered delivery's position and skips to m's
// headers, and keys m by the delivery's order key.
func withOrder(m *deliver.Message, d inbox.Delivery) {
	if d.OrderKey == "" {
		return
	}
	m.OrderKey = d.OrderKey
	if d.Sequence > 0 {
		m.Headers[deliver.HeaderSequence] = strconv.FormatInt(d.Sequence, 10)
	}
	if d.Skipped > 0 {
		m.Headers[deliver.HeaderSkipped] = strconv.Itoa(d.Skipped)
	}
}
