// Package source turns a configured sender into what the gateway needs for
// each request: [Source.Authenticate] checks the provider's signature (it
// fails closed), and [Source.Events] splits the body into events and derives
// each one's dedupe key, tenant and entity fields.
//
// Every provider has a preset (the event id, scope, tenant and entity
// fields that provider's deliveries carry); the source's configuration can
// replace any part with selectors. A key's provider part is the source's
// name, so two senders of one provider never share ids. Several event id
// parts are joined with '|' after escaping '\' and '|', so two different
// lists of parts never give one id.
//
// Events reads only the fields it needs: a header-keyed source never parses
// its body; a JSON-keyed one checks the body is JSON once and then reads
// single fields with gjson. Any problem with a body is a [*RequestError],
// which the gateway answers with 400 before storing anything.
package source
