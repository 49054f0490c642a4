package config

import (
	"fmt"
	"strings"
)

// Order values of a destination.
const (
	// OrderEntity delivers the events of one key (the entity, or
	// order_key's value) one at a time, in entity version order.
	OrderEntity = "entity"
)

// OnExhausted values of an ordered destination.
const (
	// OnExhaustedSkip: a delivery that fails for good is dead, and its
	// key moves on; the key's next delivery says one was skipped.
	OnExhaustedSkip = "skip"
	// OnExhaustedBlock: a delivery that fails for good holds its key
	// until an operator replays the event.
	OnExhaustedBlock = "block"
)

// orderHeaders are the delivery headers that carry a key's position and
// skips, and a batch's count of events; a destination's static headers
// cannot set them.
var orderHeaders = []string{"webhook-sequence", "webhook-skipped", "webhook-batch-count"}

// checkOrder checks order, order_key and on_exhausted: order_key and
// on_exhausted need order: entity, and order_key reads what a stored
// event has (its payload, its kept headers, or a constant).
func (d Destination) checkOrder() []*FieldError {
	var errs []*FieldError
	add := func(field string, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Err: fmt.Errorf(format, args...)})
	}
	switch d.Order {
	case "", OrderEntity:
	default:
		add("order", "%q: want entity (or leave it out for no order)", d.Order)
	}
	switch d.OnExhausted {
	case "", OnExhaustedSkip, OnExhaustedBlock:
	default:
		add("on_exhausted", "%q: want skip or block", d.OnExhausted)
	}
	if d.OnExhausted != "" && d.Order == "" {
		add("on_exhausted", "%q needs order: entity", d.OnExhausted)
	}
	if d.OrderKey != "" {
		if d.Order == "" {
			add("order_key", "%q needs order: entity", d.OrderKey)
		}
		sel, err := ParseSelector(d.OrderKey)
		switch {
		case err != nil:
			add("order_key", "%w", err)
		case sel.Kind != SelectJSON && sel.Kind != SelectHeader && sel.Kind != SelectConst:
			add("order_key", "%q: want json:PATH, header:NAME or const:VALUE (the key is read from the stored event)", d.OrderKey)
		}
	}
	for name := range d.Headers {
		for _, h := range orderHeaders {
			if strings.EqualFold(name, h) {
				add("headers."+name, "hookgate sets %s itself", h)
			}
		}
	}
	return errs
}
