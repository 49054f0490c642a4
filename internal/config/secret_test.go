package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestSecretNeverPrinted(t *testing.T) {
	t.Parallel()
	const value = "whsec_do_not_print"
	s := Source{Name: "a", Secret: NewSecret(value), Token: NewSecret(value)}

	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("source", "secret", s.Secret, "source", s)
	var jsonLogged bytes.Buffer
	slog.New(slog.NewJSONHandler(&jsonLogged, nil)).Info("source", "secret", s.Secret, "source", s)
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	ym, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"%v":        fmt.Sprintf("%v", s),
		"%+v":       fmt.Sprintf("%+v", s),
		"%#v":       fmt.Sprintf("%#v", s),
		"Sprint":    fmt.Sprint(s.Secret),
		"%q":        fmt.Sprintf("%q", s.Secret),
		"json":      string(js),
		"yaml":      string(ym),
		"slog text": logged.String(),
		"slog json": jsonLogged.String(),
	}
	for form, out := range outputs {
		if strings.Contains(out, value) {
			t.Errorf("%s prints the secret: %s", form, out)
		}
		if !strings.Contains(out, "****") {
			t.Errorf("%s does not print ****: %s", form, out)
		}
	}
	if s.Secret.Value() != value {
		t.Errorf("Value() = %q", s.Secret.Value())
	}
	if got := (Secret{}).String(); got != "" {
		t.Errorf("unset secret prints %q, want empty", got)
	}
}

func TestSecretFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		content string
		want    string
		err     bool
	}{
		{"abc", "abc", false},
		{"abc\n", "abc", false},
		{"abc\r\n", "abc", false},
		{"abc\n\n", "abc\n", false},
		{" abc ", " abc ", false},
		{"\n", "", true},
		{"", "", true},
		{" ", "", true},
		{" \t\n\n", "", true},
	}
	for i, tt := range tests {
		path := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		s := Secret{ref: "file:" + path}
		err := s.resolve(lookupTestEnv)
		if tt.err {
			if !errors.Is(err, ErrSecret) || !strings.Contains(err.Error(), "is empty") {
				t.Errorf("file %q: err = %v, want an empty-secret error", tt.content, err)
			}
			continue
		}
		if err != nil || s.Value() != tt.want {
			t.Errorf("file %q: Value() = %q, %v; want %q", tt.content, s.Value(), err, tt.want)
		}
	}
}

func TestSecretRefSyntax(t *testing.T) {
	t.Parallel()
	for ref, ok := range map[string]bool{
		"env:A_B":       true,
		"file:/run/s":   true,
		"env:":          false,
		"file:":         false,
		"env:A=B":       false,
		"vault:secret":  false,
		"whsec_literal": false,
	} {
		var s Secret
		err := yaml.Unmarshal([]byte(fmt.Sprintf("%q", ref)), &s)
		if (err == nil) != ok {
			t.Errorf("secret %q: err = %v, want ok=%v", ref, err, ok)
		}
		if err != nil && len(ref) > len("file:") && strings.Contains(err.Error(), ref) {
			t.Errorf("secret %q: error %q repeats the value", ref, err)
		}
		if ok && s.Ref() != ref {
			t.Errorf("secret %q: Ref() = %q", ref, s.Ref())
		}
	}
}

func TestSecretFromEnvironment(t *testing.T) {
	t.Setenv("HOOKGATE_CONFIG_TEST_SECRET", "from_env")
	cfg, err := Parse([]byte("sources:\n  - {name: gh, provider: github, secret: env:HOOKGATE_CONFIG_TEST_SECRET}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Sources[0].Secret.Value(); got != "from_env" {
		t.Errorf("secret = %q, want from_env", got)
	}
}
