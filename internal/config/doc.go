// Package config reads hookgate's YAML configuration.
//
// [Parse] decodes strictly, fills in defaults for everything left out,
// resolves secrets and validates the result; [Load] does the same for a
// file. Every error is a [*FieldError] naming the field's path in the YAML,
// its line, the value and what is wanted, in the user's words rather than
// the decoder's Go types; an unknown key suggests the nearest known one:
//
//	line 14: sources[2].provider: unknown provider "strpe" (want standard|stripe|...)
//	line 3: workerz: unknown field; did you mean workers?
//	line 5: workers: "four": want a whole number
//
// Durations are Go durations with days too ("7d", "1d12h"; [ParseDuration]).
//
// Secrets are never written in the file itself: a [Secret] is "env:NAME" or
// "file:PATH", read once at load and printed as "****" by every formatter.
// Selectors ("header:X-Event-Id", "json:data.object.id", ...) are checked here
// with [ParseSelector]; the source package evaluates them.
//
// A source's schema path is taken from the configuration file's directory
// and must name an existing file. Its destinations take the defaults
// ([OnEvent], [DefaultTimeout], [DefaultMaxAttempts], the retry, in-flight
// and pause defaults) for the fields they leave out; a destination built in
// code gets them from [Destination.WithDefaults]. A destination's static
// [HeaderValue] is a literal or a secret reference, printed as "****" like
// a [Secret].
package config
