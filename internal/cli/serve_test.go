package cli_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readDemo collects the demo lines serve prints: the secret and the curl line.
func readDemo(t *testing.T, p *process) (secret, curl string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for secret == "" || curl == "" {
		select {
		case line := <-p.out:
			if m := regexp.MustCompile(`(whsec_\S+)`).FindString(line); m != "" && strings.Contains(line, "secret") {
				secret = m
			}
			if s := strings.TrimSpace(line); strings.HasPrefix(s, "curl ") {
				curl = s
			}
		case <-deadline:
			t.Fatal("serve printed no demo secret and curl line")
		}
	}
	return secret, curl
}

// The README's first command: serve without a config prints a signed curl
// line that gets 202, then 200 when repeated; the secret survives restarts.
func TestServeDemo(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	db := "sqlite:" + t.TempDir() + "/hookgate.db"
	p := startServe(t, "--database", db, "--listen", "127.0.0.1:0")
	secret, curl := readDemo(t, p)
	for _, want := range []string{"HTTP/1.1 202", "HTTP/1.1 200"} {
		out, err := exec.Command("sh", "-c", curl+" -sS").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", curl, err, out)
		}
		if !strings.HasPrefix(string(out), want) {
			t.Fatalf("curl line: got %q, want %s", out, want)
		}
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()

	p2 := startServe(t, "--database", db, "--listen", "127.0.0.1:0")
	if again, _ := readDemo(t, p2); again != secret {
		t.Fatalf("demo secret changed across restarts: %s then %s", secret, again)
	}
}
