// Command mutate repeats the exercise behind docs/design.md's table: it
// breaks one mechanism at a time on purpose, in a temporary copy of the
// repository, runs the tests said to guard it, and prints whether they
// caught the breakage.
//
//	go run ./bench/mutate [-list bench/mutate/breakages.json] [-only NAME] [-timeout 10m] [-parallel 1] [-v]
//
// Each breakage replaces text that must occur exactly once in one file.
// A breakage is CAUGHT when its tests fail, CAUGHT (timeout) when they
// hang past -timeout (a hang is a failure of the tests, reported apart so
// that it is looked at), NOT CAUGHT when they pass, and BROKEN when its
// text is not found, the copy does not build, or no test ran. The exit
// status is 1 unless every breakage is caught.
//
// Each run's test processes are one process group, killed whole on the
// timeout or on SIGINT or SIGTERM; the temporary copies are removed on
// every path. The copy holds the work tree's files that git does not
// ignore (tracked or new), so no database or build output is copied.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// breakage is one deliberate change and the tests that must catch it.
type breakage struct {
	Name      string   `json:"name"`
	Guarantee string   `json:"guarantee"`
	File      string   `json:"file"`
	Old       string   `json:"old"`
	New       string   `json:"new"`
	Tests     string   `json:"tests"`
	Packages  []string `json:"packages"`
}

// Results of one breakage.
const (
	caught        = "CAUGHT"
	caughtTimeout = "CAUGHT (timeout)"
	notCaught     = "NOT CAUGHT"
	broken        = "BROKEN"
)

func main() {
	list := flag.String("list", "bench/mutate/breakages.json", "the breakages to apply")
	only := flag.String("only", "", "run only the breakage of this name")
	timeout := flag.Duration("timeout", 10*time.Minute, "limit of one breakage's test run; its processes are killed after it")
	parallel := flag.Int("parallel", 1, "breakages tried at once")
	verbose := flag.Bool("v", false, "print the test output of each breakage")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, options{list: *list, only: *only, timeout: *timeout, parallel: max(*parallel, 1), verbose: *verbose})
	if err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

type options struct {
	list, only string
	timeout    time.Duration
	parallel   int
	verbose    bool
}

func run(ctx context.Context, o options) error {
	root, err := output(".", "git", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	root = strings.TrimSpace(root)
	list := o.list
	if !filepath.IsAbs(list) {
		list = filepath.Join(root, list)
	}
	bs, err := load(list)
	if err != nil {
		return err
	}
	if o.only != "" {
		bs = slices.DeleteFunc(bs, func(b breakage) bool { return b.Name != o.only })
		if len(bs) == 0 {
			return fmt.Errorf("no breakage named %q", o.only)
		}
	}
	ls, err := output(root, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return err
	}
	files := strings.Split(strings.TrimRight(ls, "\x00"), "\x00")

	var (
		mu     sync.Mutex
		counts = map[string]int{}
		wg     sync.WaitGroup
		next   = make(chan breakage)
	)
	for range o.parallel {
		wg.Go(func() {
			for b := range next {
				result, detail, out := try(ctx, root, files, b, o.timeout)
				if ctx.Err() != nil {
					return // interrupted: the result says nothing
				}
				mu.Lock()
				counts[result]++
				fmt.Printf("%-16s %-3s %-50s %s\n", result, b.Guarantee, b.Name, detail)
				if o.verbose {
					os.Stdout.Write(out)
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, b := range bs {
		select {
		case next <- b:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted: %w", err)
	}
	done := counts[caught] + counts[caughtTimeout]
	fmt.Printf("caught %d / %d (timeouts among them %d, not caught %d, broken %d)\n",
		done, done+counts[notCaught]+counts[broken], counts[caughtTimeout], counts[notCaught], counts[broken])
	if counts[notCaught]+counts[broken] > 0 {
		return errors.New("some breakages went unnoticed or could not be applied")
	}
	return nil
}

// load reads the list of breakages; unknown fields, missing fields and
// repeated names are errors.
func load(path string) ([]breakage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var bs []breakage
	if err := dec.Decode(&bs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	names := map[string]bool{}
	for i, b := range bs {
		if b.Name == "" || b.Guarantee == "" || b.File == "" || b.Old == "" || b.New == "" || b.Tests == "" || len(b.Packages) == 0 {
			return nil, fmt.Errorf("%s: breakage %d (%q): name, guarantee, file, old, new, tests and packages are required", path, i, b.Name)
		}
		if b.Old == b.New {
			return nil, fmt.Errorf("%s: breakage %q changes nothing", path, b.Name)
		}
		if names[b.Name] {
			return nil, fmt.Errorf("%s: breakage %q listed twice", path, b.Name)
		}
		names[b.Name] = true
	}
	return bs, nil
}

// apply replaces b.Old by b.New in src; b.Old must occur exactly once.
func apply(src []byte, b breakage) ([]byte, error) {
	if n := bytes.Count(src, []byte(b.Old)); n != 1 {
		return nil, fmt.Errorf("old text found %d times in %s", n, b.File)
	}
	return bytes.Replace(src, []byte(b.Old), []byte(b.New), 1), nil
}

// try applies b to a fresh copy of files under root and runs its tests,
// killing them after timeout. out is the tests' output.
func try(ctx context.Context, root string, files []string, b breakage, timeout time.Duration) (result, detail string, out []byte) {
	dir, err := os.MkdirTemp("", "hookgate-mutate-")
	if err != nil {
		return broken, err.Error(), nil
	}
	defer os.RemoveAll(dir)
	if err := copyFiles(root, dir, files); err != nil {
		return broken, err.Error(), nil
	}
	target := filepath.Join(dir, b.File)
	src, err := os.ReadFile(target)
	if err != nil {
		return broken, err.Error(), nil
	}
	changed, err := apply(src, b)
	if err != nil {
		return broken, err.Error(), nil
	}
	if err := os.WriteFile(target, changed, 0o644); err != nil {
		return broken, err.Error(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// -v names every test that ran, so that a run where all were skipped
	// (a service missing) is not taken for one that passed.
	args := append([]string{"test", "-count=1", "-v", "-timeout", (timeout + time.Minute).String(), "-run", b.Tests}, b.Packages...)
	out, err = runGroup(ctx, dir, "go", args...)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return caughtTimeout, fmt.Sprintf("no answer within %s; killed", timeout), out
	}
	result, detail = classify(out, err)
	return result, detail, out
}

// runGroup runs name in a process group of its own and returns its
// combined output. When ctx ends the whole group is killed: go test runs
// test binaries, and those run servers, that would outlive their parent.
func runGroup(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A process that left the group may still hold the output pipe.
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if cmd.Process != nil {
		// The group's leader may end before its children; none may stay.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return out.Bytes(), err
}

var (
	failedTest = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
	ranTest    = regexp.MustCompile(`(?m)^--- (PASS|FAIL): `)
)

// classify reads a go test -v run's output and error.
func classify(out []byte, err error) (result, detail string) {
	switch {
	case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
		return broken, "does not build"
	case bytes.Contains(out, []byte("[no tests to run]")):
		return broken, "no test matched"
	case bytes.Contains(out, []byte("panic: test timed out")):
		return caughtTimeout, "the test binary timed out"
	case err == nil && !ranTest.Match(out):
		return broken, "every test was skipped"
	case err == nil:
		return notCaught, ""
	}
	// Name the deepest failing test: a suite's subtest says more than the
	// suite, which fails with it.
	for _, m := range failedTest.FindAllSubmatch(out, -1) {
		if len(m[1]) > len(detail) {
			detail = string(m[1])
		}
	}
	if detail != "" {
		return caught, detail
	}
	return caught, "tests failed"
}

// copyFiles copies the named files from root to dir, keeping whether each
// is executable (scripts that tests run).
func copyFiles(root, dir string, files []string) error {
	for _, f := range files {
		src := filepath.Join(root, f)
		fi, err := os.Stat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree
		}
		if err != nil {
			return err
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644|fi.Mode().Perm()&0o111); err != nil {
			return err
		}
	}
	return nil
}

// output runs name with args in dir and returns its standard output.
func output(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}
