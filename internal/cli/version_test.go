package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/hookgate/hookgate/internal/testproc"
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
	args := []string{"build", "-buildvcs=auto",
		"-ldflags", "-X github.com/hookgate/hookgate/internal/cli.version=v9.8.7-test",
		"-o", bin}
	// Built as this test binary was (with -race under the README's test
	// command), the build reuses the packages the test run compiled and
	// only links.
	if raceBuilt() {
		args = append(args, "-race")
	}
	build := exec.Command(gobin, append(args, "github.com/hookgate/hookgate/cmd/hookgate")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	version := exec.Command(bin, "--version")
	version.Env = testproc.Environ()
	out, err := version.CombinedOutput()
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
	if !gitDir(t) {
		t.Logf("a linked worktree, whose commit go build does not stamp: the commit is not checked")
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

// raceBuilt reports whether this test binary was built with -race.
func raceBuilt() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// gitDir reports whether the checkout's .git is a directory: go build
// stamps the commit only then, not in a linked worktree (.git a file).
func gitDir(t *testing.T) bool {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse --show-toplevel: %v", err)
	}
	fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git"))
	return err == nil && fi.IsDir()
}
