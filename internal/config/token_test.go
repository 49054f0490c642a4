package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An admin or metrics token shorter than MinTokenLength is refused, read
// from the environment or a file, with a message naming the field and how
// to make a good one; the value is never shown.
func TestShortTokensRefused(t *testing.T) {
	short := "only-twenty-chars-xx"
	long := strings.Repeat("0123456789abcdef", 4)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "short"), []byte(short+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "long"), []byte(long+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOOKGATE_TEST_SHORT_TOKEN", short)
	t.Setenv("HOOKGATE_TEST_LONG_TOKEN", long)
	t.Setenv("HOOKGATE_TEST_31_TOKEN", long[:MinTokenLength-1])
	t.Setenv("HOOKGATE_TEST_32_TOKEN", long[:MinTokenLength])
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"admin from env", "admin:\n  token: env:HOOKGATE_TEST_SHORT_TOKEN\n", []string{"line 2: admin.token: 20 characters"}},
		{"admin 31", "admin:\n  token: env:HOOKGATE_TEST_31_TOKEN\n", []string{"line 2: admin.token: 31 characters"}},
		{"metrics from file", "metrics:\n  token: file:" + filepath.Join(dir, "short") + "\n", []string{"line 2: metrics.token: 20 characters"}},
		{"both", "admin:\n  token: env:HOOKGATE_TEST_SHORT_TOKEN\nmetrics:\n  token: env:HOOKGATE_TEST_SHORT_TOKEN\n",
			[]string{"admin.token: 20 characters", "metrics.token: 20 characters"}},
		{"admin 32", "admin:\n  token: env:HOOKGATE_TEST_32_TOKEN\n", nil},
		{"long from file and env", "admin:\n  token: file:" + filepath.Join(dir, "long") + "\nmetrics:\n  token: env:HOOKGATE_TEST_LONG_TOKEN\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if c.want == nil {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse = %v, want ErrInvalid", err)
			}
			for _, w := range append(c.want, "at least 32", "openssl rand -hex 32") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), short) {
				t.Errorf("error %q shows the token", err)
			}
		})
	}
	cfg := Default()
	cfg.Admin.Token = NewSecret(short)
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "admin.token: 20 characters") {
		t.Errorf("Validate of a configuration built in code = %v, want the short admin.token refused", err)
	}
}

// A destination URL the validator refuses is described, never quoted: a
// mistyped Slack webhook or ?token= URL would put its secret on screen
// and in CI logs (issue 19, section 2).
func TestRefusedURLNotShown(t *testing.T) {
	for _, raw := range []string{
		"hooks.slack.com/services/T000/B000/PATHSECRET?token=QUERYSECRET",
		"ftp://user:USERSECRET@example.com/PATHSECRET?token=QUERYSECRET",
		"https:///PATHSECRET?token=QUERYSECRET",
		"http://bad host/PATHSECRET",
	} {
		yaml := "sources:\n  - name: s\n    provider: github\n    secret: env:GITHUB_SECRET\n    destinations:\n      - name: app\n        url: " + raw + "\n"
		t.Setenv("GITHUB_SECRET", "github-secret")
		_, err := Parse([]byte(yaml))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "destinations[0].url") {
			t.Fatalf("%s: Parse = %v, want the url refused", raw, err)
		}
		for _, secret := range []string{"USERSECRET", "PATHSECRET", "QUERYSECRET"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the URL's %s: %v", secret, err)
			}
		}
	}
}
