package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runHealthcheck runs `hookgate healthcheck args...` in a child process
// and returns its exit status, stdout and stderr. A probe that has not
// exited after 30 s, ten times its own timeout, is killed and fails the
// test: it would hang a container's health checks.
func runHealthcheck(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := command(t, append([]string{"healthcheck"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hung := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	if !hung.Stop() {
		t.Fatalf("hookgate healthcheck %v did not exit within 30s", args)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("hookgate healthcheck %v: %v", args, err)
	return 0, "", ""
}

// closedPort is a loopback port nothing listens on (it was just freed).
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// writeText writes text to a new file name and returns its path.
func writeText(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHealthcheckReady: against a running serve, healthcheck exits 0,
// asking the URL given or /readyz on the config's listen address (on
// loopback for an address on every interface), without the config's
// secrets.
func TestHealthcheckReady(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	port := closedPort(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(crashSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	served := writeText(t, "serve.yaml", fmt.Sprintf("listen: 127.0.0.1:%d\ndatabase: sqlite:%s\nsources:\n  - name: app\n    provider: standard\n    secret: file:%s\n",
		port, filepath.Join(dir, "hookgate.db"), secret))
	p := startServe(t, "--config", served)
	// The probe's config, as a container has it: the secret's variable
	// is not set where the probe runs.
	probe := func(listen string) string {
		return writeText(t, "probe.yaml", fmt.Sprintf("listen: %s\nsources:\n  - name: app\n    provider: standard\n    secret: env:HOOKGATE_TEST_HEALTHCHECK_UNSET\n", listen))
	}
	for _, args := range [][]string{
		{"--url", p.addr},
		{"--url", p.addr + "/readyz"},
		{"--config", served},
		{"--config", probe(fmt.Sprintf("0.0.0.0:%d", port))},
		{"--config", probe(fmt.Sprintf(":%d", port))},
	} {
		code, out, stderr := runHealthcheck(t, args...)
		if code != 0 || out != "ready: ok\n" {
			t.Errorf("healthcheck %v against a ready serve: exit status %d, stdout %q, stderr %q; want 0 and \"ready: ok\"", args, code, out, stderr)
		}
	}
}

// TestHealthcheckNotReady: a closed port, a 503 and a gateway that does
// not answer exit 1 with the reason on stderr; a degraded 200 exits 0.
func TestHealthcheckNotReady(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	answer := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/readyz" {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(status)
			fmt.Fprintln(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(hung.Close)
	for _, c := range []struct {
		name, url string
		code      int
		want      string
	}{
		{"closed port", fmt.Sprintf("http://127.0.0.1:%d", closedPort(t)), 1, "connection refused"},
		{"503", answer(http.StatusServiceUnavailable, "store unavailable"), 1, "503 Service Unavailable: store unavailable"},
		{"no answer", hung.URL, 1, "not ready"},
		{"degraded", answer(http.StatusOK, "degraded: spooling"), 0, ""},
	} {
		code, out, stderr := runHealthcheck(t, "--url", c.url)
		if code != c.code || c.code == 1 && (!strings.Contains(stderr, "healthcheck: not ready") || !strings.Contains(stderr, c.want) || out != "") {
			t.Errorf("healthcheck against %s: exit status %d, stdout %q, stderr %q; want %d and %q", c.name, code, out, stderr, c.code, c.want)
		}
		if c.code == 0 && out != "ready: degraded: spooling\n" {
			t.Errorf("healthcheck against %s: stdout %q", c.name, out)
		}
	}
}

func TestHealthcheckHelp(t *testing.T) {
	t.Parallel()
	golden(t, "help-healthcheck", runHelp(t, "healthcheck", "--help"))
}
