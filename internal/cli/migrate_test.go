package cli_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/pgtest"
)

var migratedLine = regexp.MustCompile(`^database (\S+): schema at version (\d+), up to date\n$`)

// runMigrate runs `hookgate migrate args...` in a child process and returns
// the schema version it printed for shown, the database as printed.
func runMigrate(t *testing.T, shown string, args ...string) int {
	t.Helper()
	cmd := command(t, append([]string{"migrate"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hookgate migrate %v: %v\nstdout %s\nstderr %s", args, err, stdout.String(), stderr.String())
	}
	m := migratedLine.FindStringSubmatch(stdout.String())
	if m == nil || m[1] != shown {
		t.Fatalf("hookgate migrate %v printed %q, want \"database %s: schema at version N, up to date\"", args, stdout.String(), shown)
	}
	v, _ := strconv.Atoi(m[2])
	return v
}

// startsOn checks that `hookgate serve` starts on the migrated database db
// and says it is ready.
func startsOn(t *testing.T, db string) {
	t.Helper()
	p := startServe(t, "--database", db, "--listen", "127.0.0.1:0")
	resp, err := http.Get(p.addr + "/readyz")
	if err != nil {
		t.Fatalf("/readyz of serve on the migrated database: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz of serve on the migrated database: %d, want 200", resp.StatusCode)
	}
}

// TestMigrateSQLite: migrate creates a fresh SQLite file with the inbox's
// tables at the version it prints, reading only the database of a config
// whose secrets are not set; serve then starts on the file, and migrate
// again finds it up to date.
func TestMigrateSQLite(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "hookgate.db")
	cfgPath := filepath.Join(dir, "hookgate.yaml")
	cfg := fmt.Sprintf("database: sqlite:%s\nsources:\n  - name: app\n    provider: standard\n    secret: env:HOOKGATE_TEST_MIGRATE_UNSET\n", path)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	v := runMigrate(t, "sqlite:"+path, "--config", cfgPath)

	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var have int
	if err := raw.QueryRow(`SELECT version FROM schema_versions WHERE name = 'inbox'`).Scan(&have); err != nil {
		t.Fatalf("the migrated file's inbox schema version: %v", err)
	}
	var tables int
	if err := raw.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('events', 'dedupe_keys')`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if have != v || v < 1 || tables != 2 {
		t.Fatalf("migrate printed version %d; the file is at %d with %d of the events and dedupe_keys tables", v, have, tables)
	}
	raw.Close()

	startsOn(t, "sqlite:"+path)
	if again := runMigrate(t, "sqlite:"+path, "--database", "sqlite:"+path); again != v {
		t.Errorf("migrate of an up-to-date file printed version %d, want %d", again, v)
	}
}

// TestMigratePostgres: migrate brings a fresh PostgreSQL database to the
// version it prints, showing the URL's password masked, and serve starts
// on it.
func TestMigratePostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	db := pgtest.New(t)
	u, err := neturl.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, set := u.User.Password(); !set {
		// A URL that works without a password reaches a server that does
		// not ask for one (trust): it ignores this one.
		u.User = neturl.UserPassword(u.User.Username(), "s3cret")
	}
	withPassword := u.String()
	v := runMigrate(t, u.Redacted(), "--database", withPassword)
	if !strings.Contains(u.Redacted(), ":xxxxx@") {
		t.Fatalf("the password of %s is not masked", u.Redacted())
	}

	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var have int
	if err := conn.QueryRow(t.Context(), `SELECT max(version) FROM inbox_schema_migrations`).Scan(&have); err != nil {
		t.Fatalf("the migrated database's schema version: %v", err)
	}
	if have != v || v < 1 {
		t.Fatalf("migrate printed version %d; the database is at %d", v, have)
	}
	startsOn(t, withPassword)
	if again := runMigrate(t, u.Redacted(), "--database", withPassword); again != v {
		t.Errorf("migrate of an up-to-date database printed version %d, want %d", again, v)
	}
}

// TestMigrateRefuses: a database migrate cannot open is an error naming
// it, exit status 1, and nothing on stdout.
func TestMigrateRefuses(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-dir", "hookgate.db")
	for _, c := range []struct{ database, msg string }{
		{"mysql://db/hookgate", `migrate mysql://db/hookgate: backend: unknown database "mysql://db/hookgate"`},
		{"sqlite:" + missing, "migrate sqlite:" + missing + ": "},
	} {
		var out, stderr bytes.Buffer
		err := cli.Run(t.Context(), []string{"migrate", "--database", c.database}, nil, &out, &stderr)
		if err == nil || cli.ExitCode(err) != 1 || !strings.Contains(err.Error(), c.msg) || out.Len() > 0 {
			t.Errorf("migrate --database %s: %v (stdout %q), want exit status 1 and %q", c.database, err, out.String(), c.msg)
		}
	}
}

func TestMigrateHelp(t *testing.T) {
	t.Parallel()
	golden(t, "help-migrate", runHelp(t, "migrate", "--help"))
}
