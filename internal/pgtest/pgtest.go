// Package pgtest gives each test a PostgreSQL database of its own on the
// server named by HOOKGATE_TEST_POSTGRES (default: the local server, user
// postgres). When the server cannot be reached the test is skipped with a
// one-line reason, unless HOOKGATE_REQUIRE_SERVICES=1 (CI sets it), where it
// fails instead.
//
// A test database is a copy of another (CREATE DATABASE): New copies an
// empty one, and a Template's New copies one that already has a schema, so
// that the tests which do not test the migration need not each run it.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// DefaultURL is the server tests use when HOOKGATE_TEST_POSTGRES is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL is the URL of the test server (its maintenance database).
func ServerURL() string {
	if u := os.Getenv("HOOKGATE_TEST_POSTGRES"); u != "" {
		return u
	}
	return DefaultURL
}

// Required reports whether missing services fail tests instead of
// skipping them (HOOKGATE_REQUIRE_SERVICES=1).
func Required() bool { return os.Getenv("HOOKGATE_REQUIRE_SERVICES") == "1" }

// Unavailable skips t, or fails it when services are required, saying why.
func Unavailable(t testing.TB, service string, err error) {
	t.Helper()
	if Required() {
		t.Fatalf("%s unavailable and HOOKGATE_REQUIRE_SERVICES=1: %v", service, err)
	}
	t.Skipf("%s unavailable (set HOOKGATE_TEST_POSTGRES or start it): %v", service, err)
}

// New creates an empty database for t, drops it when t ends, and returns
// its URL.
func New(t testing.TB) string {
	t.Helper()
	return create(t, "template1")
}

// create makes t a database of its own, a copy of the database from, has
// it dropped when t ends, and returns its URL.
func create(t testing.TB, from string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		Unavailable(t, "PostgreSQL", err)
	}
	defer admin.Close(context.Background())
	name := newName()
	// Copies of one template made at once do not wait for each other; a
	// copy fails when a session is connected to the template (after the
	// server waited five seconds for it to leave), and tries again.
	for {
		_, err = admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+from)
		if !isCode(err, "55006") || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("create test database from %s: %v", from, err)
	}
	t.Cleanup(func() {
		if err := drop(name); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u, err := dbURL(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// drop has the server drop the database name, and returns without waiting
// for it to be done. DROP DATABASE makes the server write a checkpoint
// of every database, which on a busy machine took half of each test's
// time (0.8 s of 1.7 s in internal/inbox/postgres, other test binaries
// writing too), and a test waiting for it kept one of go test's -parallel
// slots from the next test. A goroutine left to wait would be found by
// goleak when the test binary ends; instead the statement is sent and the
// connection closed. The server carries it out, and finds the client gone
// only when it answers, once the database is gone: it looks earlier only
// when it has a notice to send (hence client_min_messages) or when
// client_connection_check_interval is set (hence the SET). Should a DROP
// never run, the database is what a test binary killed before its
// cleanup leaves: a hookgate_test_ database, free to drop by hand.
func drop(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	config, err := pgconn.ParseConfig(ServerURL())
	if err != nil {
		return err
	}
	config.RuntimeParams["client_min_messages"] = "error"
	conn, err := pgconn.ConnectConfig(ctx, config)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	// An unknown setting before PostgreSQL 14, which does not look for
	// the client during a statement at all: its error says nothing.
	_ = conn.Exec(ctx, "SET client_connection_check_interval = 0").Close()
	conn.Frontend().Send(&pgproto3.Query{String: "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"})
	return conn.Frontend().Flush()
}

// A Template is a database that tests copy instead of building their own:
// its New gives each test a copy of what Build made, at the cost of an
// empty database. A template stays on the server between runs, shared by
// the test binaries that run at once, under a name made of Name and a
// hash of Key; so Key must change whenever what Build makes does (the
// text of the migrations that Build applies, say). Templates are named
// hookgate_template_*; one that no test uses any more is free to drop.
type Template struct {
	// Name is part of the database's name: 1 to 30 lower-case letters,
	// digits and underscores.
	Name string
	// Key is what the template's contents depend on.
	Key string
	// Build makes the contents in the empty database at url, and closes
	// its connections before it returns.
	Build func(ctx context.Context, url string) error

	once sync.Once
	db   string // the template's database, when built
	err  error  // why it was not
}

var templateName = regexp.MustCompile(`^[a-z0-9_]{1,30}$`)

// errUnavailable wraps an error that means the server is out of reach.
type errUnavailable struct{ err error }

func (e errUnavailable) Error() string { return e.err.Error() }

// New creates a database for t that is a copy of the template, drops it
// when t ends, and returns its URL. The first call in a test binary
// builds the template if the server does not have it yet.
func (tp *Template) New(t testing.TB) string {
	t.Helper()
	tp.once.Do(func() { tp.db, tp.err = tp.build() })
	var unavailable errUnavailable
	if errors.As(tp.err, &unavailable) {
		Unavailable(t, "PostgreSQL", unavailable.err)
	}
	if tp.err != nil {
		t.Fatalf("template %s: %v", tp.Name, tp.err)
	}
	return create(t, tp.db)
}

// build makes sure the server has the template, and returns its name. It
// is built as a database of another name and renamed when complete, so a
// template is always whole; of two test binaries building it at once, the
// first to rename its database wins and the other drops its own.
func (tp *Template) build() (string, error) {
	if !templateName.MatchString(tp.Name) {
		return "", fmt.Errorf("name %q: want 1 to 30 lower-case letters, digits and underscores", tp.Name)
	}
	sum := sha256.Sum256([]byte(tp.Key))
	name := "hookgate_template_" + tp.Name + "_" + hex.EncodeToString(sum[:6])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		return "", errUnavailable{err}
	}
	defer admin.Close(context.Background())
	var found bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&found); err != nil || found {
		return name, err
	}
	building := newName()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	defer drop(building) // unless renamed
	u, err := dbURL(building)
	if err != nil {
		return "", err
	}
	if err := tp.Build(ctx, u); err != nil {
		return "", fmt.Errorf("build: %w", err)
	}
	// Nobody connects from now on (but the server's autovacuum, rarely),
	// so that no copy finds the template in use, nor anyone changes it.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+building+" WITH ALLOW_CONNECTIONS false"); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil && !isCode(err, "42P04") {
		return "", err
	}
	return name, nil
}

// newName is a name for a test database that no other has.
func newName() string {
	var b [6]byte
	rand.Read(b[:]) // never fails
	return "hookgate_test_" + hex.EncodeToString(b[:])
}

// dbURL is the URL of the database name on the test server.
func dbURL(name string) (string, error) {
	u, err := url.Parse(ServerURL())
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// isCode reports whether err is a PostgreSQL error of SQLSTATE code.
func isCode(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}
