package config

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// redacted is how every formatter prints a set [Secret].
const redacted = "****"

// MaxSecrets is how many secrets a source's secret list may hold: the
// current one and those still accepted while a rotation goes on.
const MaxSecrets = 5

// Secret is a credential. In YAML it is a reference, "env:NAME" or
// "file:PATH", never the value itself; [Parse] reads the value once. Every
// printed form (String, GoString, YAML, text, and so JSON and log/slog) is
// "****"; only [Secret.Value] gives the value.
//
// A source's secret may also be a list of references, so that a sender
// signing with a new secret and one still signing with the old are both
// accepted while the secret rotates: the Secret is then the list's first
// element and [Secret.All] gives every element. Every other field that
// holds a Secret takes one reference, and [Parse] refuses a list there.
type Secret struct {
	ref   string
	value string
	// rest holds the list's elements after the first; nil for a single
	// secret. Its elements never have a rest of their own.
	rest []Secret
}

// NewSecrets returns a secret list holding values directly, for
// configurations built in code; the first is the Secret's own value.
func NewSecrets(values ...string) Secret {
	if len(values) == 0 {
		return Secret{}
	}
	s := NewSecret(values[0])
	for _, v := range values[1:] {
		s.rest = append(s.rest, NewSecret(v))
	}
	return s
}

// All returns the secret's elements in order: the secret itself alone, or
// every element of a list. An unset secret gives one unset element.
func (s Secret) All() []Secret {
	first := s
	first.rest = nil
	return append([]Secret{first}, s.rest...)
}

// IsList reports whether the secret was given as a list (of any length),
// rather than as one reference.
func (s Secret) IsList() bool { return s.rest != nil }

// NewSecret returns a secret holding value directly, for configurations
// built in code.
func NewSecret(value string) Secret {
	return Secret{value: value}
}

// Value returns the secret itself.
func (s Secret) Value() string { return s.value }

// Ref returns where the secret is read from ("env:NAME" or "file:PATH"), or
// "" for a secret made with [NewSecret]. It is safe to print.
func (s Secret) Ref() string { return s.ref }

// IsZero reports whether the secret is unset: no reference and no value.
func (s Secret) IsZero() bool { return s.ref == "" && s.value == "" }

// String returns "****" for a set secret and "" for an unset one; a list
// prints one "****" per element, comma-separated.
func (s Secret) String() string {
	if s.IsZero() {
		return ""
	}
	if s.rest == nil {
		return redacted
	}
	return strings.Repeat(redacted+",", len(s.rest)) + redacted
}

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return "config.Secret(" + s.String() + ")" }

// MarshalText keeps encoding/json and log/slog from printing the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalYAML writes "****", or a list with one "****" per element.
func (s Secret) MarshalYAML() (any, error) {
	if s.rest == nil {
		return s.String(), nil
	}
	masked := make([]string, 1+len(s.rest))
	for i := range masked {
		masked[i] = redacted
	}
	return masked, nil
}

// wantSecretRef says what a secret is, without repeating the value.
const wantSecretRef = "want env:NAME or file:PATH (the value is not shown)"

// UnmarshalYAML reads a reference, "env:NAME" or "file:PATH", or a list of
// them. The error for anything else names the element and does not repeat
// the value, which may be a pasted secret.
func (s *Secret) UnmarshalYAML(n *yaml.Node) error { return asTypeError(s.decodeNode(n)) }

func (s *Secret) decodeNode(n *yaml.Node) *FieldError {
	switch {
	case n.Kind == yaml.ScalarNode:
		return s.decodeRef(n)
	case n.Kind != yaml.SequenceNode:
		return &FieldError{Line: n.Line, Err: errors.New("want env:NAME or file:PATH, or a list of them (the value is not shown)")}
	case len(n.Content) == 0:
		return &FieldError{Line: n.Line, Err: errors.New("want at least one env:NAME or file:PATH")}
	}
	elems := make([]Secret, len(n.Content))
	for i, e := range n.Content {
		if fe := elems[i].decodeRef(e); fe != nil {
			fe.Field = "[" + strconv.Itoa(i) + "]"
			return fe
		}
	}
	*s = elems[0]
	s.rest = elems[1:]
	return nil
}

// decodeRef reads one reference.
func (s *Secret) decodeRef(n *yaml.Node) *FieldError {
	if n.Kind != yaml.ScalarNode || checkSecretRef(n.Value) != nil {
		return &FieldError{Line: n.Line, Err: errors.New(wantSecretRef)}
	}
	*s = Secret{ref: n.Value}
	return nil
}

// checkSecretRef reports whether ref is a well-formed reference.
func checkSecretRef(ref string) error {
	kind, arg, _ := strings.Cut(ref, ":")
	switch {
	case kind != "env" && kind != "file":
		return fmt.Errorf("%w: a secret must be env:NAME or file:PATH", ErrSecret)
	case arg == "":
		return fmt.Errorf("%w: %s: needs a name after the colon", ErrSecret, kind)
	case kind == "env" && strings.ContainsAny(arg, "= \t\n"):
		return fmt.Errorf("%w: env:%s: not an environment variable name", ErrSecret, arg)
	}
	return nil
}

// resolve reads the value of a referenced secret. A file's one trailing
// newline is dropped, as editors and `echo` add it.
func (s *Secret) resolve(lookupEnv func(string) (string, bool)) error {
	if s.ref == "" {
		return nil
	}
	kind, arg, _ := strings.Cut(s.ref, ":")
	var v string
	if kind == "env" {
		v, _ = lookupEnv(arg)
		if v == "" {
			return fmt.Errorf("%w: %s is unset or empty", ErrSecret, s.ref)
		}
	} else {
		b, err := os.ReadFile(arg)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrSecret, s.ref, err)
		}
		v = string(b)
		if t, ok := strings.CutSuffix(v, "\r\n"); ok {
			v = t
		} else {
			v = strings.TrimSuffix(v, "\n")
		}
		if v == "" {
			return fmt.Errorf("%w: %s is empty", ErrSecret, s.ref)
		}
	}
	// A secret of spaces is a mistake (a value quoted wrong, a file of
	// blanks) that would leave a source or the admin API open to anyone
	// who sends the same spaces.
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%w: %s is empty (whitespace only)", ErrSecret, s.ref)
	}
	s.value = v
	return nil
}

// resolveList resolves each element of a secret list with fn, naming the
// element field[i] (field alone for a single secret).
func (s *Secret) resolveList(field string, fn func(field string, e *Secret)) {
	if s.rest == nil {
		fn(field, s)
		return
	}
	rest := s.rest
	s.rest = nil
	fn(field+"[0]", s)
	for i := range rest {
		fn(fmt.Sprintf("%s[%d]", field, i+1), &rest[i])
	}
	s.rest = rest
}

// HeaderValue is the value of a destination's static request header. In
// YAML it is either a secret reference, "env:NAME" or "file:PATH", read
// once by [Parse] like a [Secret], or any other text, kept as written. A
// header often carries a credential (Authorization), so every printed form
// is "****" whichever it is; only [HeaderValue.Value] gives the value.
type HeaderValue struct {
	secret Secret
}

// NewHeaderValue returns a header value holding value directly, for
// configurations built in code.
func NewHeaderValue(value string) HeaderValue {
	return HeaderValue{secret: NewSecret(value)}
}

// Value returns the header's value.
func (h HeaderValue) Value() string { return h.secret.Value() }

// Ref returns where the value is read from ("env:NAME" or "file:PATH"), or
// "" for a literal. It is safe to print.
func (h HeaderValue) Ref() string { return h.secret.Ref() }

// String returns "****" for a set value and "" for an empty one.
func (h HeaderValue) String() string { return h.secret.String() }

// GoString keeps %#v from printing the value.
func (h HeaderValue) GoString() string { return "config.HeaderValue(" + h.String() + ")" }

// MarshalText keeps encoding/json and log/slog from printing the value.
func (h HeaderValue) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// MarshalYAML writes "****".
func (h HeaderValue) MarshalYAML() (any, error) { return h.String(), nil }

// UnmarshalYAML reads a reference when the text starts with "env:" or
// "file:", and a literal otherwise. The error for a malformed reference
// names the reference; a literal is never repeated.
func (h *HeaderValue) UnmarshalYAML(n *yaml.Node) error { return asTypeError(h.decodeNode(n)) }

func (h *HeaderValue) decodeNode(n *yaml.Node) *FieldError {
	if n.Kind != yaml.ScalarNode {
		return wrongKind(n, "text, env:NAME or file:PATH")
	}
	if isSecretRef(n.Value) {
		if err := checkSecretRef(n.Value); err != nil {
			return &FieldError{Line: n.Line, Err: err}
		}
		*h = HeaderValue{secret: Secret{ref: n.Value}}
		return nil
	}
	*h = NewHeaderValue(n.Value)
	return nil
}

// isSecretRef reports whether v is meant as a reference: it starts with
// "env:" or "file:".
func isSecretRef(v string) bool {
	return strings.HasPrefix(v, "env:") || strings.HasPrefix(v, "file:")
}
