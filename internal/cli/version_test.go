package cli_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionStamped builds the hookgate binary as a release is built,
// with the version stamped through -ldflags -X, in this checkout: it prints
// the stamped version and the checkout's commit.
func TestVersionStamped(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the hookgate binary")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build hookgate with")
	}
	// Colleagues' commits move HEAD: the commit is checked only when it
	// did not move while the binary was built.
	before, gitErr := exec.Command("git", "rev-parse", "HEAD").Output()
	bin := filepath.Join(t.TempDir(), "hookgate")
	build := exec.Command(gobin, "build", "-buildvcs=auto",
		"-ldflags", "-X github.com/hookgate/hookgate/internal/cli.version=v9.8.7-test",
		"-o", bin, "github.com/hookgate/hookgate/cmd/hookgate")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("hookgate --version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "hookgate v9.8.7-test\n") {
		t.Errorf("hookgate --version of a stamped build:\n%s\nwant hookgate v9.8.7-test first", out)
	}
	if gitErr != nil {
		t.Logf("no git checkout here (%v): the commit is not checked", gitErr)
		return
	}
	if after, err := exec.Command("git", "rev-parse", "HEAD").Output(); err != nil || string(after) != string(before) {
		t.Logf("HEAD moved during the build (%v): the commit is not checked", err)
		return
	}
	if want := "\ncommit   " + strings.TrimSpace(string(before)); !strings.Contains(string(out), want) {
		t.Errorf("hookgate --version built in a checkout:\n%s\nwant %q", out, want)
	}
}
