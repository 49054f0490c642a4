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
	return startBouncer(t, mode, bouncerDir(t), "")
}

// NewTLSBouncer is NewBouncer for clients that must use TLS, as a managed
// PostgreSQL service requires: the bouncer refuses a client that does not
// ask for it, and presents a certificate for 127.0.0.1 and localhost
// signed by a self-signed CA made for this bouncer alone. caFile is that
// CA's certificate (PEM), the sslrootcert a verifying client trusts.
func NewTLSBouncer(t testing.TB, mode string) (b *Bouncer, caFile string) {
	t.Helper()
	dir := bouncerDir(t)
	ca := newAuthority(t)
	caFile = writeFile(t, dir, "ca.pem", ca.certPEM)
	cert, key := ca.issue(t, "127.0.0.1", "localhost")
	conf := fmt.Sprintf(`client_tls_sslmode = require
client_tls_cert_file = %s
client_tls_key_file = %s
`, writeFile(t, dir, "server.pem", cert), writeFile(t, dir, "server.key", key))
	return startBouncer(t, mode, dir, conf), caFile
}

// bouncerDir is a directory for a bouncer's files, removed when t ends.
// PgBouncer refuses to run as root; it then runs as postgres, which must
// read them (the TLS key too): a directory of their own, readable by all.
func bouncerDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hookgate-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeFile writes data to name in dir, readable by all (see bouncerDir),
// and returns its path.
func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startBouncer starts PgBouncer in mode with its files in dir and the
// lines extra added to its [pgbouncer] section, as NewBouncer says.
func startBouncer(t testing.TB, mode, dir, extra string) *Bouncer {
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
	users := writeFile(t, dir, "users.txt", fmt.Appendf(nil, "%q %q\n", user, pass))
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
		ini := writeFile(t, dir, "pgbouncer.ini", fmt.Appendf(nil, `[databases]
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
%s`, target, port, users, mode, extra))
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
