package postgres_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/postgres"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// The TLS tests put a PgBouncer that requires TLS in front of the test
// server, in session mode, standing in for a managed PostgreSQL service:
// the shared local server is not to be reconfigured for TLS.

// With sslmode=verify-full and the service's CA as sslrootcert the Store
// opens, works, and its connections are TLS whose server certificate was
// verified against that CA for the host named in the URL, an IP address
// or a DNS name.
func TestTLSVerifyFull(t *testing.T) {
	t.Parallel()
	b, ca := pgtest.NewTLSBouncer(t, pgtest.Session)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		t.Run(host, func(t *testing.T) {
			t.Parallel()
			s := open(t, tlsURL(t, b.URL(t, pgtest.New(t)), host, "verify-full", ca), nil)
			out, err := s.Accept(t.Context(), []inbox.Item{testItem("a")})
			if err != nil {
				t.Fatalf("Accept: %v", err)
			}
			if e, err := s.Get(t.Context(), out[0].ID); err != nil || e.EventID != "a" {
				t.Fatalf("Get: %+v, %v; want the accepted event", e, err)
			}
			conn, err := s.Pool().Acquire(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			tc, ok := conn.Conn().PgConn().Conn().(*tls.Conn)
			if !ok {
				t.Fatalf("connection is a %T, not TLS", conn.Conn().PgConn().Conn())
			}
			// Go fills VerifiedChains only when it verified the chain and
			// the host itself (pgx's verify-ca verifies on its own, and
			// require not at all).
			chains := tc.ConnectionState().VerifiedChains
			if len(chains) == 0 {
				t.Fatal("TLS without a verified chain; want verify-full")
			}
			if root := chains[0][len(chains[0])-1]; !root.Equal(readCA(t, ca)) {
				t.Errorf("chain verified up to %q; want the bouncer's CA", root.Subject)
			}
		})
	}
}

// verify-full under a CA that did not sign the server's certificate is
// refused: Open fails with the certificate's verification error.
func TestTLSVerifyFullRefusesAnotherCA(t *testing.T) {
	t.Parallel()
	b, _ := pgtest.NewTLSBouncer(t, pgtest.Session)
	u := tlsURL(t, b.URL(t, pgtest.New(t)), "127.0.0.1", "verify-full", pgtest.NewCAFile(t))
	s, err := postgres.Open(t.Context(), u, postgres.Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open under another CA succeeded; want the server's certificate refused")
	}
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("Open under another CA: %v; want x509.UnknownAuthorityError", err)
	}
}

// A client that does not ask for TLS is refused by a server that requires
// it: Open with sslmode=disable fails.
func TestTLSRequiredRefusesPlain(t *testing.T) {
	t.Parallel()
	b, _ := pgtest.NewTLSBouncer(t, pgtest.Session)
	u := tlsURL(t, b.URL(t, pgtest.New(t)), "127.0.0.1", "disable", "")
	s, err := postgres.Open(t.Context(), u, postgres.Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open with sslmode=disable succeeded; want it refused")
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Errorf("Open with sslmode=disable: %v; want the server's refusal", err)
	}
	t.Logf("refused: %v", err)
}

// tlsURL is db with host in place of its host (the port kept), and
// sslmode and, unless empty, sslrootcert set.
func tlsURL(t *testing.T, db, host, sslmode, rootcert string) string {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = host + ":" + u.Port()
	q := u.Query()
	q.Set("sslmode", sslmode)
	if rootcert != "" {
		q.Set("sslrootcert", rootcert)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// readCA is the CA certificate in the PEM file path.
func readCA(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("no PEM in %s", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
