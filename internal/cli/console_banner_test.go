package cli_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// serve's banner says where the console is, and GET / on the operator's
// listener opens it; an unknown path under /api/ is still the API's JSON
// 404. Without admin.token the banner says the console is off.
func TestServeBannerSaysWhereTheConsoleIs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/admin", []byte("console-banner-admin-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, extra, banner string }{
		{"off", "", "console not served: set admin.token"},
		{"on", "admin:\n  token: file:" + dir + "/admin\n", "/ui/ (sign in with admin.token)"},
	} {
		path := fmt.Sprintf("%s/%s.yaml", dir, c.name)
		cfg := fmt.Sprintf("listen: 127.0.0.1:0\ndatabase: sqlite:%s/%s.db\n%ssources:\n  - name: gh\n    provider: github\n    secret: env:HOME\n", dir, c.name, c.extra)
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		p := startServe(t, "--config", path)
		line := p.waitLine(t, "console")
		if !strings.Contains(line, c.banner) {
			t.Errorf("%s: banner %q, want %q", c.name, line, c.banner)
		}
		if c.name == "off" {
			continue
		}
		if !strings.Contains(line, p.addr+"/ui/") {
			t.Errorf("banner %q does not name %s/ui/", line, p.addr)
		}
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Get(p.addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" {
			t.Errorf("GET / = %d to %q, want 303 to /ui/", resp.StatusCode, resp.Header.Get("Location"))
		}
		req, _ := http.NewRequest(http.MethodGet, p.addr+"/api/nope", nil)
		req.Header.Set("Authorization", "Bearer console-banner-admin-token-0123456789abcdef")
		resp, err = client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"error":"no such route: /api/nope"`) {
			t.Errorf("GET /api/nope = %d %s, want the API's JSON 404", resp.StatusCode, body)
		}
	}
}
