package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
)

// readConfig names secrets in the environment and a file that are not
// there, and a destination with nothing but its URL.
const readConfig = `database: sqlite:/var/lib/hookgate/hookgate.db
retention: 72h
admin:
  token: env:HOOKGATE_TEST_READ_ADMIN_UNSET
sources:
  - name: shop
    provider: stripe
    secret: env:HOOKGATE_TEST_READ_SECRET_UNSET
    destinations:
      - name: app
        url: http://127.0.0.1:9/hook
        secret: file:/nonexistent/hookgate-secret
`

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hookgate.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoadDatabase: the database commands' loader reads the database and
// retention of a config whose secrets cannot be read, which Load refuses.
func TestLoadDatabase(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, readConfig)
	if _, err := config.Load(path); !errors.Is(err, config.ErrSecret) {
		t.Fatalf("Load: %v, want a secret error", err)
	}
	cfg, err := config.LoadDatabase(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Database != "sqlite:/var/lib/hookgate/hookgate.db" || time.Duration(cfg.Retention) != 72*time.Hour ||
		len(cfg.Sources) != 1 || cfg.Sources[0].Name != "shop" || cfg.Sources[0].Secret.Value() != "" {
		t.Errorf("LoadDatabase = %+v", cfg)
	}
	days, err := config.LoadDatabase(writeConfig(t, "retention: 7d\n"))
	if err != nil || time.Duration(days.Retention) != 7*24*time.Hour {
		t.Errorf("LoadDatabase of retention: 7d: %v, retention %v", err, time.Duration(days.Retention))
	}
	empty, err := config.LoadDatabase(writeConfig(t, ""))
	if err != nil || empty.Database != config.DefaultDatabase {
		t.Errorf("LoadDatabase of an empty file: %v, database %q", err, empty.Database)
	}
}

// TestLoadDatabaseRefuses: what the database commands read is checked,
// and the file is decoded as strictly as Load decodes it.
func TestLoadDatabaseRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, text, want string }{
		{"unknown key", "databse: sqlite:x.db\n", "line 1: databse: unknown field; did you mean database?"},
		{"retention a word", "retention: forever\n", "line 1: retention: \"forever\": want a duration like 30s, 5m, 2h or 7d"},
		{"bad database", "database: mysql://x\n", "database"},
		{"bad retention", "retention: 0s\n", "retention"},
		{"not yaml", "database: [\n", "config"},
	} {
		_, err := config.LoadDatabase(writeConfig(t, c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
	if _, err := config.LoadDatabase(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
