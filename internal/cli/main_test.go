package cli_test

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/testproc"
)

// hookgateBin is the hookgate command the tests start as child processes
// (real `hookgate serve` processes they can kill): built once per run.
var hookgateBin string

func TestMain(m *testing.M) {
	flag.Parse()
	parallelForChildren()
	dir, err := os.MkdirTemp("", "hookgate-cli-test")
	if err != nil {
		panic(err)
	}
	code := 1
	if hookgateBin, err = buildHookgate(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildHookgate builds cmd/hookgate into dir, without the race detector
// even when this test binary has it: the children then run at full speed
// (under -race each would take about eight times the CPU, and the process
// tests start dozens of them), while this binary's own code, and the
// packages' in-process tests of serve, keep the detector.
func buildHookgate(dir string) (string, error) {
	bin := filepath.Join(dir, "hookgate")
	build := exec.Command("go", "build", "-o", bin, "github.com/hookgate/hookgate/cmd/hookgate")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build hookgate for the process tests: %v\n%s", err, out)
	}
	return bin, nil
}

// parallelForChildren lets more of the package's parallel tests run at once
// than the default of one per CPU, unless -parallel was given: most of
// their time is spent waiting on child processes, sockets and brokers, not
// on this process's CPU.
func parallelForChildren() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
}

// process is a running `hookgate serve` child.
type process struct {
	cmd  *exec.Cmd
	addr string
	out  chan string
}

var listenLine = regexp.MustCompile(`hookgate listening on (http://\S+)`)

// command returns the command that runs `hookgate args...` in a child
// process.
func command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(hookgateBin, args...)
	cmd.Env = testproc.Environ()
	return cmd
}

// startServe starts `hookgate serve args...` in a child process and waits
// until it listens.
func startServe(t *testing.T, args ...string) *process {
	t.Helper()
	cmd := command(t, append([]string{"serve"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &testWriter{t: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, out: make(chan string, 100)}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	lines := bufio.NewScanner(stdout)
	found := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if m := listenLine.FindStringSubmatch(lines.Text()); m != nil {
				found <- m[1]
			}
			select {
			case p.out <- lines.Text():
			default:
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case p.addr = <-found:
	case <-time.After(60 * time.Second):
		t.Fatal("hookgate serve did not start listening within 60s")
	}
	return p
}

// testWriter sends a child's stderr to the test log.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(b []byte) (int, error) {
	w.t.Logf("serve: %s", b)
	return len(b), nil
}
