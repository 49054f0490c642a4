package config

import (
	"errors"
	"strings"
	"testing"
)

// rotationEnv holds the secrets of the rotation tests.
func rotationEnv(name string) (string, bool) {
	v, ok := map[string]string{"NEW": "new-secret", "OLD": "old-secret", "THIRD": "third-secret"}[name]
	return v, ok
}

func TestSecretList(t *testing.T) {
	cfg, err := parse([]byte("sources:\n  - {name: gh, provider: github, secret: [env:NEW, env:OLD]}\n"), "", rotationEnv)
	if err != nil {
		t.Fatal(err)
	}
	all := cfg.Sources[0].Secret.All()
	if len(all) != 2 || all[0].Value() != "new-secret" || all[1].Value() != "old-secret" {
		t.Fatalf("All() = %v, want the new secret then the old one", all)
	}
	if all[1].Ref() != "env:OLD" {
		t.Errorf("second Ref() = %q", all[1].Ref())
	}
	if got := cfg.Sources[0].Secret.Value(); got != "new-secret" {
		t.Errorf("Value() = %q, want the list's first", got)
	}

	cfg, err = parse([]byte("sources:\n  - {name: gh, provider: github, secret: env:OLD}\n"), "", rotationEnv)
	if err != nil {
		t.Fatal(err)
	}
	if all := cfg.Sources[0].Secret.All(); len(all) != 1 || all[0].Value() != "old-secret" || cfg.Sources[0].Secret.IsList() {
		t.Errorf("a scalar secret: All() = %v, IsList %v", all, cfg.Sources[0].Secret.IsList())
	}
}

func TestSecretListRedacted(t *testing.T) {
	cfg, err := parse([]byte("sources:\n  - {name: gh, provider: github, secret: [env:NEW, env:OLD]}\n"), "", rotationEnv)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cfg.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "new-secret") || strings.Contains(string(out), "old-secret") {
		t.Fatalf("Redacted prints a secret:\n%s", out)
	}
	if !strings.Contains(string(out), "secret:\n      - '****'\n      - '****'\n") {
		t.Errorf("Redacted does not show a list of two masked secrets:\n%s", out)
	}
}

func TestSecretListErrors(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		want       []string
	}{
		{"element unset", "sources:\n  - {name: gh, provider: github, secret: [env:NEW, env:MISSING]}\n",
			[]string{"sources[0].secret[1]", "env:MISSING is unset"}},
		{"element malformed", "sources:\n  - name: gh\n    provider: github\n    secret: [env:NEW, pasted-value]\n",
			[]string{"line 4", "secret[1]"}},
		{"element not a scalar", "sources:\n  - {name: gh, provider: github, secret: [env:NEW, [env:OLD]]}\n",
			[]string{"secret[1]"}},
		{"empty list", "sources:\n  - {name: gh, provider: github, secret: []}\n",
			[]string{"at least one"}},
		{"too many", "sources:\n  - {name: gh, provider: github, secret: [env:NEW, env:OLD, env:THIRD, file:/a, file:/b, file:/c]}\n",
			[]string{"sources[0].secret", "6 secrets, at most 5"}},
		{"twice", "sources:\n  - {name: gh, provider: github, secret: [env:NEW, env:OLD, env:NEW]}\n",
			[]string{"sources[0].secret[2]", "env:NEW is secret[0] again"}},
		{"destination secret", "sources:\n  - name: gh\n    provider: github\n    secret: env:NEW\n    destinations:\n      - {name: app, url: 'http://127.0.0.1:1/x', secret: [env:NEW, env:OLD]}\n",
			[]string{"sources[0].destinations[0].secret", "not a list"}},
		{"admin token", "admin: {token: [env:NEW, env:OLD]}\nsources:\n  - {name: gh, provider: github, secret: env:NEW}\n",
			[]string{"admin.token", "not a list"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse([]byte(tt.yaml), "", rotationEnv)
			if err == nil {
				t.Fatal("parsed, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "pasted-value") {
				t.Errorf("error %q repeats the value", err)
			}
		})
	}
}

func TestSecretListInCode(t *testing.T) {
	s := Source{Name: "gh", Provider: "github", Secret: NewSecrets("new", "")}
	err := s.Validate()
	if !errors.Is(err, ErrSecret) || !strings.Contains(err.Error(), "secret[1]") {
		t.Errorf("Validate() = %v, want secret[1] empty", err)
	}
	if s := NewSecrets("a", "b"); s.String() != "****,****" || len(s.All()) != 2 {
		t.Errorf("NewSecrets: String %q, All %d", s.String(), len(s.All()))
	}
}
