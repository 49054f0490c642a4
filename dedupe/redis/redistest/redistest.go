// Package redistest gives each test a Redis client and a key prefix of its
// own on the server named by HOOKGATE_TEST_REDIS (a redis:// URL; default:
// the local server, database 0). When the server cannot be reached the test
// is skipped with a one-line reason, unless HOOKGATE_REQUIRE_SERVICES=1 (CI
// sets it), where it fails instead.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// DefaultURL is the server tests use when HOOKGATE_TEST_REDIS is unset.
const DefaultURL = "redis://127.0.0.1:6379/0"

// URL is the URL of the test server.
func URL() string {
	if u := os.Getenv("HOOKGATE_TEST_REDIS"); u != "" {
		return u
	}
	return DefaultURL
}

// New returns a client of the test server that honours context deadlines,
// and a key prefix no other test uses. When t ends, the keys under the
// prefix are deleted and the client is closed.
func New(t testing.TB) (*goredis.Client, string) {
	t.Helper()
	opts, err := goredis.ParseURL(URL())
	if err != nil {
		t.Fatalf("HOOKGATE_TEST_REDIS: %v", err)
	}
	opts.ContextTimeoutEnabled = true
	client := goredis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		if os.Getenv("HOOKGATE_REQUIRE_SERVICES") == "1" {
			t.Fatalf("Redis unavailable and HOOKGATE_REQUIRE_SERVICES=1: %v", err)
		}
		t.Skipf("Redis unavailable (set HOOKGATE_TEST_REDIS or start it): %v", err)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	prefix := "hookgate_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		defer client.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		iter := client.Scan(ctx, 0, "{"+prefix+"}*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := client.Del(ctx, iter.Val()).Err(); err != nil {
				t.Errorf("delete test key %s: %v", iter.Val(), err)
				return
			}
		}
		if err := iter.Err(); err != nil {
			t.Errorf("scan test keys of %s: %v", prefix, err)
		}
	})
	return client, prefix
}

// Refused returns the address of a local port nothing listens on: a Redis
// that refuses connections.
func Refused(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Silent returns the address of a local server that accepts connections
// and never answers: a Redis that hangs. It closes when t ends.
func Silent(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// Patient returns a client of addr that honours context deadlines and
// would otherwise wait for ever, so a call to a silent server ends only
// by its context. It is closed when t ends.
func Patient(t testing.TB, addr string) *goredis.Client {
	t.Helper()
	client := goredis.NewClient(&goredis.Options{
		Addr: addr, ContextTimeoutEnabled: true, ReadTimeout: -1, WriteTimeout: -1, DialTimeout: time.Hour,
	})
	t.Cleanup(func() { client.Close() })
	return client
}
