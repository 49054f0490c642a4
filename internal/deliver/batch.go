package deliver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
)

// HeaderBatchCount is the number of events a batch's POST carries.
const HeaderBatchCount = "webhook-batch-count"

// The statuses a destination's results document gives each event of a
// batch.
const (
	// ResultOK: the destination took the event.
	ResultOK = "ok"
	// ResultRetry: it did not, and the event is to be sent again later,
	// on its own schedule.
	ResultRetry = "retry"
	// ResultReject: it never will; the event fails for good for the
	// destination, as a 4xx refusal of it alone would.
	ResultReject = "reject"
)

// ResultsSize bounds how much of a 2xx answer to a batch is read for its
// results document; an answer longer than that cannot be read, and every
// event of the batch is retried.
const ResultsSize = 1 << 20

// BatchSender is implemented by the Senders that deliver several messages
// in one attempt (HTTP's).
type BatchSender interface {
	// SendBatch makes one attempt to deliver ms together.
	SendBatch(ctx context.Context, ms []Message) BatchOutcome
}

// SendBatch posts ms to the destination as one batch.
func (s httpSender) SendBatch(ctx context.Context, ms []Message) BatchOutcome {
	return s.c.DeliverBatch(ctx, s.d, ms)
}

// BatchOutcome is how one attempt to deliver a batch ended.
type BatchOutcome struct {
	// Outcome is the POST's. When it is not Delivered, every message of
	// the batch failed as its own delivery would have (Retryable,
	// RetryAfter and Err say how).
	Outcome
	// ID is the batch's webhook-id: its own, not any event's.
	ID string
	// Results, when Delivered, are the destination's answer for each
	// message, in the order of the messages.
	Results []Result
}

// Result is the destination's answer for one message of a batch.
type Result struct {
	// Status is ResultOK, ResultRetry or ResultReject.
	Status string
	// Error is the destination's reason for a retry or a reject (text
	// safe to log, at most 256 bytes), or what was wrong with its answer.
	Error string
}

// DeliverBatch makes one attempt to deliver ms to d in one POST: a JSON
// array of one element per message (see the batch's wire format in
// docs/delivery.md), signed as one body, under a webhook-id of its own
// and with HeaderBatchCount. A 2xx answer that is a results document
// ({"results": [...]}) gives each message its own Result; any other 2xx
// answer means the destination took them all.
func (c *Client) DeliverBatch(ctx context.Context, d Destination, ms []Message) BatchOutcome {
	start := c.now()
	id := newBatchID()
	m := Message{WebhookID: id, Payload: encodeBatch(ms), ContentType: "application/json",
		Headers: map[string]string{HeaderBatchCount: strconv.Itoa(len(ms))}}
	out, body := c.deliver(ctx, d, m, ResultsSize)
	out.Duration = c.now().Sub(start)
	b := BatchOutcome{Outcome: out, ID: id}
	if out.Delivered {
		ids := make([]string, len(ms))
		for i, m := range ms {
			ids[i] = m.WebhookID
		}
		u, _ := url.Parse(d.URL) // it was posted to: it parses
		b.Results = ParseResults(body, ids, func(s string) string { return scrub(text([]byte(s), snippetSize, false), u) })
	}
	return b
}

// newBatchID is a batch's webhook-id: unique, as a batch is never sent
// twice (its events that are retried go again in later batches).
func newBatchID() string {
	var b [16]byte
	rand.Read(b[:])
	return "batch_" + hex.EncodeToString(b[:])
}

// element is a message in a batch, but for its payload.
type element struct {
	WebhookID string `json:"webhook_id"`
	Type      string `json:"type"`
	Source    string `json:"source"`
	Tenant    string `json:"tenant"`
	// Sequence and Skipped are an ordered delivery's HeaderSequence and
	// HeaderSkipped.
	Sequence int64 `json:"sequence,omitempty"`
	Skipped  int   `json:"skipped,omitempty"`
}

// encodeBatch is the body of a batch of ms: a JSON array of one object
// per message, whose payload is the message's as it is when it is JSON
// (byte for byte), and a JSON string of it when it is not (an XML
// notification).
func encodeBatch(ms []Message) []byte {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, m := range ms {
		if i > 0 {
			buf.WriteByte(',')
		}
		e := element{WebhookID: m.WebhookID, Type: m.Type, Source: m.Source, Tenant: m.Tenant}
		e.Sequence, _ = strconv.ParseInt(m.Headers[HeaderSequence], 10, 64)
		e.Skipped, _ = strconv.Atoi(m.Headers[HeaderSkipped])
		head, _ := json.Marshal(e) // strings and numbers: it cannot fail
		buf.Write(head[:len(head)-1])
		buf.WriteString(`,"payload":`)
		if json.Valid(m.Payload) {
			buf.Write(m.Payload)
		} else {
			p, _ := json.Marshal(string(m.Payload))
			buf.Write(p)
		}
		buf.WriteByte('}')
	}
	buf.WriteByte(']')
	return buf.Bytes()
}

// ParseResults reads a destination's 2xx answer to a batch of the
// messages with webhook ids ids, and returns one Result per id, in order.
// clean makes the destination's error text safe to keep.
//
//   - An answer that is not a JSON object with a "results" member (an
//     empty body, "OK", {"received": true}) means every message was taken.
//   - An answer longer than ResultsSize, or whose "results" is not an
//     array, cannot be read: every message is retried.
//   - Each element of "results" answers for the message of its
//     "webhook_id": "ok", "retry" or "reject" (lower case), with an
//     optional "error". An element that is not an object of strings, or
//     that names no message of the batch, is ignored.
//   - An unknown status, or two elements with different statuses for one
//     message, retry it; so does the document's silence: a message that
//     no element names is retried.
func ParseResults(body []byte, ids []string, clean func(string) string) []Result {
	out := make([]Result, len(ids))
	all := func(r Result) []Result {
		for i := range out {
			out[i] = r
		}
		return out
	}
	if len(body) > ResultsSize {
		return all(Result{Status: ResultRetry, Error: fmt.Sprintf("the destination's answer is longer than %d bytes: its results cannot be read", ResultsSize)})
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return all(Result{Status: ResultOK})
	}
	raw, ok := doc["results"]
	if !ok {
		return all(Result{Status: ResultOK})
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return all(Result{Status: ResultRetry, Error: "the destination's results document has no array of results"})
	}
	at := make(map[string][]int, len(ids))
	for i, id := range ids {
		at[id] = append(at[id], i)
	}
	seen := make([]bool, len(ids))
	for _, item := range items {
		var e struct {
			WebhookID string `json:"webhook_id"`
			Status    string `json:"status"`
			Error     string `json:"error"`
		}
		if json.Unmarshal(item, &e) != nil {
			continue
		}
		r := Result{Status: e.Status}
		switch e.Status {
		case ResultOK:
		case ResultRetry, ResultReject:
			r.Error = clean(e.Error)
		default:
			r = Result{Status: ResultRetry, Error: fmt.Sprintf("the destination's results give it the unknown status %s", strconv.Quote(clean(e.Status)))}
		}
		for _, i := range at[e.WebhookID] {
			switch {
			case !seen[i]:
				out[i], seen[i] = r, true
			case out[i].Status != r.Status:
				out[i] = Result{Status: ResultRetry, Error: "the destination's results give it different statuses"}
			}
		}
	}
	for i := range out {
		if !seen[i] {
			out[i] = Result{Status: ResultRetry, Error: "the destination's results leave it out"}
		}
	}
	return out
}
