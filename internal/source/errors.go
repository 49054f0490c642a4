package source

import (
	"errors"
	"fmt"

	"github.com/hookgate/hookgate/internal/provider"
)

// Sentinel errors that a [*RequestError] wraps.
var (
	// ErrMalformed reports a body that is not in the provider's format: not
	// JSON, not a JSON array of objects, not a Salesforce SOAP message.
	ErrMalformed = provider.ErrMalformed
	// ErrBatchSize reports a batch with no events or more than [MaxBatch].
	ErrBatchSize = errors.New("batch size out of range")
	// ErrMissing reports that a selected event id part or tenant is absent
	// or empty.
	ErrMissing = provider.ErrMissing
	// ErrNotScalar reports that a selector chose a JSON object or array
	// where a value was needed.
	ErrNotScalar = errors.New("an object or array, not a value")
	// ErrDuplicateName reports a name that appears twice where a selector
	// reads it: a JSON object's member, an XML element or attribute. Parsers
	// disagree on which of the two counts (gjson takes the first, most JSON
	// parsers the last), so the key would depend on who reads the event.
	ErrDuplicateName = errors.New("duplicate name")
	// ErrBadTenant reports a path tenant that is not 1 to [MaxPathTenant]
	// bytes of printable UTF-8: it would break the headers it is delivered
	// in and the terminals it is listed on.
	ErrBadTenant = errors.New("invalid tenant")
	// ErrPathTenant reports a tenant in the URL path of a source that does
	// not take its tenant from the path.
	ErrPathTenant = errors.New("this source takes no tenant in the URL path")
)

// RequestError says what is wrong with a request's body or headers: which
// event, which part of it and which selector. The gateway answers 400 with
// its message and stores nothing.
type RequestError struct {
	// Index is the event's position in the body, or -1 when the error is
	// about the whole request.
	Index int
	// Part names what was being read: "body", "event id", "tenant".
	Part string
	// Selector is the selector that was evaluated, in config form; "" when
	// none was.
	Selector string
	// Err wraps one of the package's sentinel errors.
	Err error
}

// Error returns "event 2: event id: json:eventId: missing or empty", leaving
// out the parts that do not apply.
func (e *RequestError) Error() string {
	msg := e.Part + ": "
	if e.Index >= 0 {
		msg = fmt.Sprintf("event %d: %s", e.Index, msg)
	}
	if e.Selector != "" {
		msg += e.Selector + ": "
	}
	return msg + e.Err.Error()
}

// Unwrap returns the underlying problem.
func (e *RequestError) Unwrap() error { return e.Err }

// bodyError reports a problem with the request as a whole.
func bodyError(format string, args ...any) *RequestError {
	return &RequestError{Index: -1, Part: "body", Err: fmt.Errorf(format, args...)}
}
