package pgtest

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Pool modes of a Bouncer.
const (
	// Transaction lends a server connection for one transaction: no
	// session state (prepared statements, session locks, LISTEN) lasts
	// past it.
	Transaction = "transaction"
	// Session lends a server connection for a client's whole session.
	Session = "session"
)

// Bouncer is a PgBouncer process in front of the test server.
type Bouncer struct {
	addr string
}

// NewBouncer starts PgBouncer (found on PATH or in /usr/sbin) in mode in
// front of the test server, and stops it when t ends. Without PgBouncer
// the test is skipped, or fails when services are required.
func NewBouncer(t testing.TB, mode string) *Bouncer {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/pgbouncer"); err != nil {
			Unavailable(t, "PgBouncer", err)
		}
	}
	server, err := url.Parse(ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	user := server.User.Username()
	pass, _ := server.User.Password()
	// PgBouncer refuses to run as root; it then runs as postgres, which
	// must read its files: a directory of their own, readable by all.
	dir, err := os.MkdirTemp("", "hookgate-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dir, "users.txt")
	if err := os.WriteFile(users, fmt.Appendf(nil, "%q %q\n", user, pass), 0o644); err != nil {
		t.Fatal(err)
	}
	target := fmt.Sprintf("host=%s port=%s", server.Hostname(), server.Port())
	if pass != "" {
		target += " password=" + pass
	}
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		ini := filepath.Join(dir, "pgbouncer.ini")
		if err := os.WriteFile(ini, fmt.Appendf(nil, `[databases]
* = %s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
max_client_conn = 5000
default_pool_size = 40
ignore_startup_parameters = extra_float_digits
logfile =
pidfile =
`, target, port, users, mode), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{ini}
		if os.Geteuid() == 0 {
			args = []string{"-u", "postgres", ini}
		}
		cmd := exec.Command(bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if lastErr = waitListening(addr, exited); lastErr == nil {
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})
			return &Bouncer{addr: addr}
		}
		cmd.Process.Kill()
		lastErr = fmt.Errorf("%w: %s", lastErr, out.String())
	}
	t.Fatalf("start pgbouncer: %v", lastErr)
	return nil
}

// URL is db, a database of the test server (from New), reached through
// the bouncer.
func (b *Bouncer) URL(t testing.TB, db string) string {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = b.addr
	return u.String()
}

// freePort is a TCP port on the loopback nobody listened on a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitListening waits until addr takes connections, the process exits
// (exited), or ten seconds pass.
func waitListening(addr string, exited <-chan error) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("pgbouncer exited: %v", err)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("pgbouncer not listening on %s after 10s", addr)
}
