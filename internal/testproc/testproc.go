// Package testproc runs copies of the current test in separate processes of
// the test binary, released together, for tests of what several processes
// sharing one file do at once.
//
// A test calls [AsChild] first: in a child it gets the child's view and
// runs the child's part; in the parent it calls [Run], which starts the
// children, waits until each has said it is [Child.Ready], releases them
// all at once and returns what each [Child.Report]ed.
package testproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The parent tells a child which test it runs, which child it is, its
// argument and where to write its report.
const (
	envTest  = "HOOKGATE_TESTPROC_TEST"
	envIndex = "HOOKGATE_TESTPROC_INDEX"
	envArg   = "HOOKGATE_TESTPROC_ARG"
	envOut   = "HOOKGATE_TESTPROC_OUT"
	ready    = "testproc: ready"
)

// Child is a child process's view of its run.
type Child struct {
	// Index tells the children of one Run apart: 0 to n-1.
	Index int
	// Arg is the argument the parent gave Run.
	Arg string
	out string
}

// AsChild reports whether this process is a child started by Run for t.
func AsChild(t *testing.T) (*Child, bool) {
	if os.Getenv(envTest) != t.Name() {
		return nil, false
	}
	i, err := strconv.Atoi(os.Getenv(envIndex))
	if err != nil {
		t.Fatalf("testproc: child index: %v", err)
	}
	return &Child{Index: i, Arg: os.Getenv(envArg), out: os.Getenv(envOut)}, true
}

// Ready tells the parent this child is set up, then waits until the parent
// releases every child at once.
func (c *Child) Ready(t *testing.T) {
	fmt.Println(ready)
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		t.Fatal(err)
	}
}

// Report hands v, as JSON, to the parent.
func (c *Child) Report(t *testing.T, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.out, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

type child struct {
	cmd    *exec.Cmd
	out    string
	stdin  io.WriteCloser
	stdout *bufio.Reader
	logs   bytes.Buffer
}

// Run runs n children of t with arg, releases them together once all are
// ready, waits for them to pass, and returns each one's report.
func Run(t *testing.T, n int, arg string) [][]byte {
	t.Helper()
	dir := t.TempDir()
	cs := make([]*child, n)
	for i := range cs {
		c := &child{out: filepath.Join(dir, fmt.Sprintf("child%d.json", i))}
		c.cmd = exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
		c.cmd.Env = Environ(envTest+"="+t.Name(), envIndex+"="+strconv.Itoa(i), envArg+"="+arg, envOut+"="+c.out)
		c.cmd.Stderr = &c.logs
		var err error
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.stdout = bufio.NewReader(stdout)
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cs[i] = c
	}
	for i, c := range cs {
		line, err := c.stdout.ReadString('\n')
		if line != ready+"\n" {
			rest, _ := io.ReadAll(c.stdout)
			t.Fatalf("child %d: first line %q (%v), want %q; output:\n%s%s\n%s", i, line, err, ready, line, rest, c.logs.String())
		}
	}
	for _, c := range cs {
		c.stdin.Close()
	}
	reports := make([][]byte, n)
	for i, c := range cs {
		rest, _ := io.ReadAll(c.stdout)
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v; output:\n%s\n%s", i, err, rest, c.logs.String())
		}
		data, err := os.ReadFile(c.out)
		if err != nil {
			t.Fatalf("child %d report: %v", i, err)
		}
		reports[i] = data
	}
	return reports
}

// Environ is the environment of a child process of a test: this process's,
// with the race detector's pause at exit (a second by default) turned off,
// so that a test waiting for its children does not wait that second each
// time, then extra.
func Environ(extra ...string) []string {
	env := append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return append(env, extra...)
}
