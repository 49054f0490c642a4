package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/testproc"
)

// runCLIEnv makes the test binary act as the hookgate command, so tests can
// start real `hookgate serve` processes and kill them.
const runCLIEnv = "HOOKGATE_TEST_RUN_CLI"

func TestMain(m *testing.M) {
	if v := os.Getenv(runCLIEnv); v != "" {
		var args []string
		if err := json.Unmarshal([]byte(v), &args); err != nil {
			panic(err)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := cli.Run(ctx, args, os.Stdin, os.Stdout, os.Stderr)
		stop()
		if err != nil {
			os.Stderr.WriteString("hookgate: " + err.Error() + "\n")
			os.Exit(cli.ExitCode(err))
		}
		os.Exit(0)
	}
	flag.Parse()
	parallelForChildren()
	os.Exit(m.Run())
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
// process: the test binary acting as hookgate.
func command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	enc, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = testproc.Environ(runCLIEnv + "=" + string(enc))
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
