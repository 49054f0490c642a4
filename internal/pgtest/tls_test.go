package pgtest

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
)

// A server certificate verifies under its CA for each host it was issued
// for, and for no other host or under another CA; the key is its own.
func TestIssue(t *testing.T) {
	t.Parallel()
	ca := newAuthority(t)
	certPEM, keyPEM := ca.issue(t, "127.0.0.1", "localhost")
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("key pair: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	other, err := os.ReadFile(NewCAFile(t))
	if err != nil {
		t.Fatal(err)
	}
	otherRoots := x509.NewCertPool()
	if !otherRoots.AppendCertsFromPEM(other) {
		t.Fatal("NewCAFile wrote no certificate")
	}
	for _, c := range []struct {
		host  string
		roots *x509.CertPool
		ok    bool
	}{
		{"127.0.0.1", roots, true},
		{"localhost", roots, true},
		{"127.0.0.2", roots, false},
		{"db.example.com", roots, false},
		{"127.0.0.1", otherRoots, false},
	} {
		_, err := pair.Leaf.Verify(x509.VerifyOptions{DNSName: c.host, Roots: c.roots})
		if (err == nil) != c.ok {
			t.Errorf("verify for %s (own CA %v): %v; want ok %v", c.host, c.roots == roots, err, c.ok)
		}
	}
}
