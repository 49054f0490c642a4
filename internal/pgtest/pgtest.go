// Package pgtest gives each test a PostgreSQL database of its own on the
// server named by HOOKGATE_TEST_POSTGRES (default: the local server, user
// postgres). When the server cannot be reached the test is skipped with a
// one-line reason, unless HOOKGATE_REQUIRE_SERVICES=1 (CI sets it), where it
// fails instead.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		Unavailable(t, "PostgreSQL", err)
	}
	defer admin.Close(context.Background())
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "hookgate_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, ServerURL())
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
