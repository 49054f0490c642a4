package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/config"
)

// readCommands are the commands that only work on the database, each with
// the arguments of one run.
var readCommands = [][]string{
	{"events", "list"},
	{"events", "show", "1"},
	{"events", "tail", "--interval", "1ms"},
	{"dead", "list"},
	{"stats"},
	{"replay", "--dead"},
	{"sweep"},
}

// runReadCommand runs `hookgate args...`. A tail, which runs until its
// context ends, gets a context that has ended: it still opens the
// database first.
func runReadCommand(t *testing.T, args []string, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithCancel(t.Context())
	if slices.Contains(args, "tail") {
		cancel()
	}
	defer cancel()
	return cli.Run(ctx, args, nil, stdout, stderr)
}

// TestReadCommandsNeedNoSecrets: with a config whose secrets are not set,
// the database commands run, while check-config (which reads them) fails.
func TestReadCommandsNeedNoSecrets(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Now())
	d.accept("shop", "acme", "evt_1")
	path := filepath.Join(t.TempDir(), "hookgate.yaml")
	text := `database: sqlite:` + d.path + `
admin:
  token: env:HOOKGATE_TEST_UNSET_ADMIN_TOKEN
sources:
  - name: shop
    provider: stripe
    secret: env:HOOKGATE_TEST_UNSET_STRIPE_SECRET
    destinations:
      - name: app
        url: http://127.0.0.1:9/hook
        secret: file:` + filepath.Join(t.TempDir(), "missing") + `
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range readCommands {
		var out, stderr bytes.Buffer
		if err := runReadCommand(t, slices.Concat(args, []string{"--config", path}), &out, &stderr); err != nil {
			t.Errorf("hookgate %v --config (secrets unset): %v\n%s", args, err, stderr.String())
		}
	}
	var out bytes.Buffer
	if err := cli.Run(t.Context(), []string{"check-config", "--config", path}, nil, &out, &out); !errors.Is(err, config.ErrSecret) {
		t.Errorf("check-config with secrets unset: %v, want a secret error", err)
	}
}

// TestReadCommandsWithoutDatabase: without a config, the database commands
// refuse to create the default database, and name the one they looked for;
// a --database file that is not there is refused too. Neither is created.
func TestReadCommandsWithoutDatabase(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("HOOKGATE_CONFIG", "")
	for _, args := range readCommands {
		var out, stderr bytes.Buffer
		err := runReadCommand(t, args, &out, &stderr)
		if err == nil || err.Error() != "no hookgate database at ./hookgate.db; pass --config or --database" || out.Len() > 0 {
			t.Errorf("hookgate %v in an empty directory: %v, printed %q", args, err, out.String())
		}
		err = runReadCommand(t, slices.Concat(args, []string{"--database", "sqlite:data/other.db"}), &out, &stderr)
		if err == nil || !strings.HasPrefix(err.Error(), "no hookgate database at ./data/other.db ") {
			t.Errorf("hookgate %v --database sqlite:data/other.db: %v", args, err)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		t.Errorf("the directory holds %v (%v), want nothing", entries, err)
	}
}
