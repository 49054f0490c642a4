package cli_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/verify"
)

// sign's headers make a request the provider's verifier accepts.
func TestSignVerifies(t *testing.T) {
	t.Parallel()
	body := `{"id":"evt_1","type":"charge.succeeded"}`
	for _, c := range []struct {
		provider, secret string
		verifier         func() (verify.Verifier, error)
		extra            []string
	}{
		{"hmac", "s3cret", func() (verify.Verifier, error) {
			return verify.NewHMAC("s3cret", verify.HMACConfig{Header: "X-Sig", Algorithm: "sha512", Encoding: "base64", Prefix: "v1="})
		}, []string{"--header", "X-Sig", "--algorithm", "sha512", "--encoding", "base64", "--prefix", "v1="}},
		{"stripe", "whsec_test", func() (verify.Verifier, error) { return verify.NewStripe("whsec_test") }, nil},
		{"standard", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", func() (verify.Verifier, error) {
			return verify.NewStandard("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
		}, nil},
		{"github", "gh-secret", func() (verify.Verifier, error) { return verify.NewGitHub("gh-secret") }, nil},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"sign", "--provider", c.provider, "--secret", c.secret, "-H", "webhook-id: msg_1"}, c.extra...)
		err := cli.Run(t.Context(), args, strings.NewReader(body), &out, &errb)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.provider, err, errb.String())
		}
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:8080/in/"+c.provider, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		headers, curl, _ := strings.Cut(out.String(), "\n\n")
		for _, line := range strings.Split(headers, "\n") {
			name, value, _ := strings.Cut(line, ": ")
			req.Header.Set(name, value)
		}
		v, err := c.verifier()
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Verify(req, []byte(body)); err != nil {
			t.Errorf("%s: printed headers do not verify: %v\n%s", c.provider, err, out.String())
		}
		if !strings.HasPrefix(curl, "curl -i -X POST 'http://127.0.0.1:8080/in/"+c.provider+"'") || !strings.Contains(curl, body) {
			t.Errorf("%s: curl line %q", c.provider, curl)
		}
	}
	err := cli.Run(t.Context(), []string{"sign", "--provider", "stripe"}, strings.NewReader(body), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || cli.ExitCode(err) != 1 {
		t.Fatalf("sign without a secret: %v, want a configuration error", err)
	}
}

func TestCheckConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("whsec_do-not-print-me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("sources:\n  - name: stripe\n    provider: stripe\n    secret: file:"+secret+"\n"), 0o600)
	var out bytes.Buffer
	if err := cli.Run(t.Context(), []string{"check-config", "--config", good}, nil, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "valid, 1 source") || !strings.Contains(out.String(), "'****'") ||
		strings.Contains(out.String(), "do-not-print-me") {
		t.Fatalf("check-config output:\n%s", out.String())
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("sources:\n  - name: stripe\n    provider: stripe\n    sekret: file:"+secret+"\n"), 0o600)
	err := cli.Run(t.Context(), []string{"check-config", "--config", bad}, nil, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), "sekret") {
		t.Fatalf("unknown key: %v, want an error naming sekret and line 4", err)
	}
}
