package cli_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// serve's banner says where /metrics is served, and it is served on the
// public listener only when the configuration says so.
func TestServeBannerSaysWhereMetricsAre(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name, extra, banner string
		status              int
	}{
		{"default", "", "metrics not served: set admin.listen, metrics.token or metrics.public: true", http.StatusNotFound},
		{"public", "metrics:\n  public: true\n", "/metrics (metrics.public: open to anyone", http.StatusOK},
	} {
		path := fmt.Sprintf("%s/%s.yaml", dir, c.name)
		cfg := fmt.Sprintf("listen: 127.0.0.1:0\ndatabase: sqlite:%s/%s.db\n%ssources:\n  - name: gh\n    provider: github\n    secret: env:HOME\n", dir, c.name, c.extra)
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		p := startServe(t, "--config", path)
		if line := p.waitLine(t, "metrics"); !strings.Contains(line, c.banner) {
			t.Errorf("%s: banner %q, want %q", c.name, line, c.banner)
		}
		resp, err := http.Get(p.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: GET /metrics = %d, want %d", c.name, resp.StatusCode, c.status)
		}
	}
}

// waitLine returns the first line of serve's output that contains s.
func (p *process) waitLine(t *testing.T, s string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line := <-p.out:
			if strings.Contains(line, s) {
				return line
			}
		case <-timeout:
			t.Fatalf("serve printed no line with %q within 30s", s)
		}
	}
}

// check-config and serve refuse an admin token too short to withstand
// guessing, naming the field and how to make one.
func TestShortAdminTokenRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/admin", []byte("short-admin-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := dir + "/hookgate.yaml"
	cfg := fmt.Sprintf("listen: 127.0.0.1:0\ndatabase: sqlite:%[1]s/hookgate.db\nadmin:\n  token: file:%[1]s/admin\nsources:\n  - name: gh\n    provider: github\n    secret: env:HOME\n", dir)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"check-config", "serve"} {
		out, err := command(t, cmd, "--config", path).CombinedOutput()
		if err == nil {
			t.Errorf("%s accepted a 17-character admin token:\n%s", cmd, out)
		}
		for _, want := range []string{"admin.token: 17 characters", "openssl rand -hex 32"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s: output lacks %q:\n%s", cmd, want, out)
			}
		}
		if strings.Contains(string(out), "short-admin-token") {
			t.Errorf("%s shows the token:\n%s", cmd, out)
		}
	}
}
