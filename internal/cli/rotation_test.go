package cli_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/source"
)

// G3: a GitHub source rotating its secret, `secret: [new, old]` in the
// YAML, through a real `hookgate serve`: a delivery signed with the new
// secret and two signed with the old are accepted, one signed with a third
// is 401, and /metrics counts each secret's requests under its index, so
// the operator sees when the old one (index 1) stops being used.
// check-config prints the list masked.
func TestSecretRotationThroughServe(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a hookgate process")
	}
	const newSecret, oldSecret, thirdSecret = "rotation-new-secret", "rotation-old-secret", "rotation-third-secret"
	dir := t.TempDir()
	for name, v := range map[string]string{"new": newSecret, "old": oldSecret} {
		if err := os.WriteFile(dir+"/"+name, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
database: sqlite:%[1]s/hookgate.db
metrics:
  public: true
sources:
  - name: gh
    provider: github
    secret: [file:%[1]s/new, file:%[1]s/old]
`, dir)
	path := dir + "/hookgate.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := command(t, "check-config", "--config", path).CombinedOutput()
	if err != nil {
		t.Fatalf("check-config: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "secret:\n      - '****'\n      - '****'\n") {
		t.Errorf("check-config does not show the masked list:\n%s", out)
	}
	if strings.Contains(string(out), "rotation-") {
		t.Errorf("check-config prints a secret:\n%s", out)
	}

	p := startServe(t, "--config", path)
	send := func(secret, delivery string) int {
		t.Helper()
		signer, err := source.NewSigner(config.Source{Name: "gh", Provider: "github", Secret: config.NewSecret(secret)})
		if err != nil {
			t.Fatal(err)
		}
		body := fmt.Appendf(nil, `{"action":"opened","delivery":%q}`, delivery)
		return postSigned(t, signer, p.addr+"/in/gh", body, http.Header{
			"X-Github-Event": {"issues"}, "X-Github-Delivery": {delivery}})
	}
	for _, s := range []struct {
		secret, delivery string
		want             int
	}{
		{newSecret, "d-new-1", http.StatusAccepted},
		{oldSecret, "d-old-1", http.StatusAccepted},
		{oldSecret, "d-old-2", http.StatusAccepted},
		{thirdSecret, "d-third-1", http.StatusUnauthorized},
	} {
		if got := send(s.secret, s.delivery); got != s.want {
			t.Errorf("%s: %d, want %d", s.delivery, got, s.want)
		}
	}

	resp, err := http.Get(p.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	scrape, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, scrape)
	}
	for _, want := range []string{
		`hookgate_verified_total{secret="0",source="gh"} 1`,
		`hookgate_verified_total{secret="1",source="gh"} 2`,
		`hookgate_events_received_total{outcome="unauthenticated",source="gh"} 1`,
	} {
		if !strings.Contains(string(scrape), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", scrape)
	}
}
