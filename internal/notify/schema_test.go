package notify_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/hookgate/hookgate/internal/notify"
)

// alertSchema compiles schemas/alert.json, asserting its formats
// (date-time, uri) as well.
func alertSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "schemas", "alert.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	s, err := c.Compile(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, body []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// The webhook channel's body, a Message as JSON, is what the schema
// describes, for every kind and change.
func TestSchemaAcceptsEveryMessage(t *testing.T) {
	s := alertSchema(t)
	for _, kind := range kinds {
		for _, change := range changes {
			m := sample(kind, change)
			t.Run(m.Type+"/"+string(change), func(t *testing.T) {
				body, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				if err := validate(t, s, body); err != nil {
					t.Errorf("%s\n%v", body, err)
				}
			})
		}
	}
}

func TestSchemaRefuses(t *testing.T) {
	s := alertSchema(t)
	good, err := json.Marshal(sample("destination.failing", notify.Opened))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"no type", func(m map[string]any) { delete(m, "type") }, "type"},
		{"an unknown type", func(m map[string]any) { m["type"] = "destination.sad" }, "type"},
		{"an unknown change", func(m map[string]any) { m["change"] = "closed" }, "change"},
		{"no incident", func(m map[string]any) { delete(m, "incident") }, "incident"},
		{"an opened_at that is no time", func(m map[string]any) { m["opened_at"] = "10:04" }, "opened_at"},
		{"a count that is no integer", func(m map[string]any) { m["counts"] = map[string]any{"pending": 1.5} }, "pending"},
		{"resolved without resolved_at", func(m map[string]any) {
			m["type"], m["change"] = "destination.recovered", "resolved"
		}, "resolved_at"},
		{"a resolved destination.failing (it is destination.recovered)", func(m map[string]any) {
			m["change"], m["resolved_at"] = "resolved", "2025-03-14T12:17:25Z"
		}, "change"},
		{"destination.recovered that is opened", func(m map[string]any) { m["type"] = "destination.recovered" }, "change"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(good, &m); err != nil {
				t.Fatal(err)
			}
			c.edit(m)
			body, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			err = validate(t, s, body)
			if err == nil {
				t.Fatalf("accepted %s", body)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error does not name %s: %v", c.want, err)
			}
		})
	}
}

// Each field of Message is a property of the schema, so a field added to
// one is added to the other.
func TestSchemaNamesEveryField(t *testing.T) {
	s := alertSchema(t)
	typ := reflect.TypeFor[notify.Message]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if _, ok := s.Properties[name]; !ok {
			t.Errorf("schemas/alert.json has no property %q (Message.%s)", name, typ.Field(i).Name)
		}
	}
}

// The bodies docs/alerts.md shows under Payloads are valid, one per
// change, and say in summary what Text says.
func TestSchemaDocExamples(t *testing.T) {
	s := alertSchema(t)
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Payloads\n")
	if !ok {
		t.Fatal("docs/alerts.md has no section ## Payloads")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var seen []string
	for _, block := range strings.Split(section, "```json\n")[1:] {
		body, _, ok := strings.Cut(block, "```")
		if !ok {
			t.Fatalf("an unclosed block: %s", block)
		}
		if err := validate(t, s, []byte(body)); err != nil {
			t.Errorf("%s\n%v", body, err)
		}
		var m notify.Message
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		if _, words := notify.Text(m); m.Summary != words {
			t.Errorf("summary %q, but Text says %q", m.Summary, words)
		}
		seen = append(seen, string(m.Change))
	}
	if strings.Join(seen, " ") != "opened reminder resolved" {
		t.Errorf("the examples' changes are %v, want one of each", seen)
	}
}
