package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/cli"
)

// noSourcesWarning is what check-config and serve print on stderr for a
// configuration without sources.
const noSourcesWarning = "warning: no sources: hookgate accepts nothing until one is configured (see docs/configuration.md)\n"

// writeCheckConfig writes text as a configuration file in a new directory.
func writeCheckConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hookgate.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// check-config accepts a configuration without sources, and warns that it
// accepts nothing; with a source it warns of nothing.
func TestCheckConfigWarnsWithoutSources(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, text, stdout, stderr string }{
		{"empty file", "", "valid, 0 source(s)", noSourcesWarning},
		{"no sources", "listen: 127.0.0.1:0\n", "valid, 0 source(s)", noSourcesWarning},
		{"one source", "sources:\n  - {name: gh, provider: github, secret: env:HOME}\n", "valid, 1 source(s)", ""},
	} {
		var out, errb bytes.Buffer
		if err := cli.Run(t.Context(), []string{"check-config", "--config", writeCheckConfig(t, c.text)}, nil, &out, &errb); err != nil {
			t.Fatalf("%s: check-config: %v", c.name, err)
		}
		if !strings.Contains(out.String(), c.stdout) {
			t.Errorf("%s: stdout %q, want %q", c.name, out.String(), c.stdout)
		}
		if errb.String() != c.stderr {
			t.Errorf("%s: stderr %q, want %q", c.name, errb.String(), c.stderr)
		}
	}
}

// check-config names the YAML path, the value and what is wanted, not the
// decoder's Go types.
func TestCheckConfigErrorsInTheUsersWords(t *testing.T) {
	t.Parallel()
	const source = "sources:\n  - name: a\n    provider: stripe\n    secret: env:HOME\n"
	for _, c := range []struct{ text, want string }{
		{source + "    retries: 3\n", "line 5: sources[0].retries: unknown field; want one of: name, provider, secret,"},
		{"workerz: 4\n", "line 1: workerz: unknown field; did you mean workers?"},
		{"workers: four\n", `line 1: workers: "four": want a whole number`},
		{source + "    window: 7 days\n", `line 5: sources[0].window: "7 days": want a duration like 30s, 5m, 2h or 7d`},
	} {
		var out, errb bytes.Buffer
		err := cli.Run(t.Context(), []string{"check-config", "--config", writeCheckConfig(t, c.text)}, nil, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("check-config of %q: %v, want %q", c.text, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "config.") {
			t.Errorf("check-config of %q names a Go type: %v", c.text, err)
		}
	}
}

// serve starts on a configuration without sources, and warns that it
// accepts nothing.
func TestServeWarnsOfAnEmptyConfig(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a hookgate process")
	}
	dir := t.TempDir()
	path := writeCheckConfig(t, "listen: 127.0.0.1:0\ndatabase: sqlite:"+dir+"/hookgate.db\n")
	_, logs := startServeLogs(t, "--config", path)
	want := strings.TrimSuffix(noSourcesWarning, "\n")
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line := <-logs:
			if line == want {
				return
			}
		case <-timeout:
			t.Fatalf("serve printed no %q on stderr", want)
		}
	}
}
