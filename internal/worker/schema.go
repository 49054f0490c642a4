package worker

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// CompileSchema compiles the JSON Schema file at path (draft 2020-12 unless
// the file names another).
func CompileSchema(path string) (*jsonschema.Schema, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", path, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	s, err := c.Compile(abs)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", path, err)
	}
	return s, nil
}

// validate checks payload against s; the error says what is wrong.
func validate(s *jsonschema.Schema, payload []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("payload is not JSON: %w", err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	return nil
}
