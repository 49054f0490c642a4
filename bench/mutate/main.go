// Command mutate repeats the exercise behind docs/design.md's table: it
// breaks one mechanism at a time on purpose, in a temporary copy of the
// repository, runs the tests said to guard it, and prints whether they
// caught the breakage.
//
//	go run ./bench/mutate [-list bench/mutate/breakages.json] [-only NAME] [-timeout 10m]
//
// Each breakage replaces text that must occur exactly once in one file.
// A breakage is CAUGHT when its tests fail, NOT CAUGHT when they pass, and
// BROKEN when its text is not found, the copy does not build, or no test
// matched. The exit status is 1 unless every breakage is caught.
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
	"path/filepath"
	"regexp"
	"strings"
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
	caught    = "CAUGHT"
	notCaught = "NOT CAUGHT"
	broken    = "BROKEN"
)

func main() {
	list := flag.String("list", "bench/mutate/breakages.json", "the breakages to apply")
	only := flag.String("only", "", "run only the breakage of this name")
	timeout := flag.Duration("timeout", 10*time.Minute, "limit of one breakage's test run")
	flag.Parse()
	if err := run(*list, *only, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

func run(list, only string, timeout time.Duration) error {
	root, err := output(".", "git", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	root = strings.TrimSpace(root)
	bs, err := load(filepath.Join(root, list))
	if err != nil {
		return err
	}
	files, err := output(root, "git", "ls-files", "-z")
	if err != nil {
		return err
	}
	counts := map[string]int{}
	for _, b := range bs {
		if only != "" && b.Name != only {
			continue
		}
		result, detail := try(root, strings.Split(strings.TrimRight(files, "\x00"), "\x00"), b, timeout)
		counts[result]++
		fmt.Printf("%-10s %-3s %-45s %s\n", result, b.Guarantee, b.Name, detail)
	}
	fmt.Printf("caught %d / %d (not caught %d, broken %d)\n",
		counts[caught], counts[caught]+counts[notCaught]+counts[broken], counts[notCaught], counts[broken])
	if counts[notCaught]+counts[broken] > 0 {
		return errors.New("some breakages went unnoticed or could not be applied")
	}
	return nil
}

// load reads the list of breakages; unknown fields are errors.
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
	for i, b := range bs {
		if b.Name == "" || b.File == "" || b.Old == "" || b.Tests == "" || len(b.Packages) == 0 {
			return nil, fmt.Errorf("%s: breakage %d (%q): name, file, old, tests and packages are required", path, i, b.Name)
		}
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

// try applies b to a fresh copy of files under root and runs its tests.
func try(root string, files []string, b breakage, timeout time.Duration) (result, detail string) {
	dir, err := os.MkdirTemp("", "hookgate-mutate-")
	if err != nil {
		return broken, err.Error()
	}
	defer os.RemoveAll(dir)
	if err := copyFiles(root, dir, files); err != nil {
		return broken, err.Error()
	}
	target := filepath.Join(dir, b.File)
	src, err := os.ReadFile(target)
	if err != nil {
		return broken, err.Error()
	}
	changed, err := apply(src, b)
	if err != nil {
		return broken, err.Error()
	}
	if err := os.WriteFile(target, changed, 0o644); err != nil {
		return broken, err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := append([]string{"test", "-count=1", "-run", b.Tests}, b.Packages...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return classify(out, err)
}

var failedTest = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// classify reads a go test run's output and error.
func classify(out []byte, err error) (result, detail string) {
	switch {
	case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
		return broken, "does not build"
	case bytes.Contains(out, []byte("[no tests to run]")):
		return broken, "no test matched"
	case err == nil:
		return notCaught, ""
	}
	if m := failedTest.FindSubmatch(out); m != nil {
		return caught, string(m[1])
	}
	return caught, "tests failed"
}

// copyFiles copies the named files from root to dir.
func copyFiles(root, dir string, files []string) error {
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree
		}
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
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
