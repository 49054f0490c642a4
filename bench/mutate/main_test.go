package main

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestApplyExactlyOnce(t *testing.T) {
	b := breakage{File: "f.go", Old: "a", New: "b"}
	if got, err := apply([]byte("xay"), b); err != nil || string(got) != "xby" {
		t.Fatalf("once: %q %v", got, err)
	}
	for _, src := range []string{"xyz", "aa"} {
		if _, err := apply([]byte(src), b); err == nil {
			t.Errorf("%q: applied, want an error (old text must occur exactly once)", src)
		}
	}
}

func TestClassify(t *testing.T) {
	failed := errors.New("exit status 1")
	for _, c := range []struct {
		out    string
		err    error
		result string
	}{
		{"--- FAIL: TestX (0.01s)\nFAIL\n", failed, caught},
		{"=== RUN   TestX\n--- PASS: TestX (0.01s)\nok  \tpkg\t0.1s\n", nil, notCaught},
		{"=== RUN   TestX\n--- SKIP: TestX (0.00s)\nok  \tpkg\t0.1s\n", nil, broken},
		{"ok  \tpkg\t0.1s [no tests to run]\n", nil, broken},
		{"FAIL\tpkg [build failed]\n", failed, broken},
		{"panic: test timed out after 1m0s\n", failed, caughtTimeout},
	} {
		if got, _ := classify([]byte(c.out), c.err); got != c.result {
			t.Errorf("%q: %s, want %s", c.out, got, c.result)
		}
	}
	out := "--- FAIL: TestInbox (0.10s)\n    --- FAIL: TestInbox/AcceptNew (0.01s)\nFAIL\n"
	if _, detail := classify([]byte(out), failed); detail != "TestInbox/AcceptNew" {
		t.Errorf("a failed subtest is reported as %q, want TestInbox/AcceptNew", detail)
	}
}

func TestLoadIsStrict(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.json")
	os.WriteFile(path, []byte(`[{"name":"n","file":"f","old":"o","new":"","tests":"T","packages":["./x"],"extra":1}]`), 0o600)
	if _, err := load(path); err == nil {
		t.Fatal("unknown field accepted")
	}
	for _, list := range []string{
		`[{"name":"n","guarantee":"G1","file":"f","old":"","new":"n","tests":"T","packages":["./x"]}]`,
		`[{"name":"n","file":"f","old":"o","new":"n","tests":"T","packages":["./x"]}]`,
		`[{"name":"n","guarantee":"G1","file":"f","old":"o","new":"o","tests":"T","packages":["./x"]}]`,
		`[{"name":"n","guarantee":"G1","file":"f","old":"o","new":"n","tests":"T","packages":["./x"]},
		  {"name":"n","guarantee":"G1","file":"g","old":"o","new":"n","tests":"T","packages":["./x"]}]`,
	} {
		os.WriteFile(path, []byte(list), 0o600)
		if _, err := load(path); err == nil {
			t.Errorf("%s: accepted (a field missing, nothing changed or a name repeated)", list)
		}
	}
	if bs, err := load("breakages.json"); err != nil || len(bs) == 0 {
		t.Fatalf("the shipped list: %d breakages, %v", len(bs), err)
	}
}

// TestBreakagesApplyToTheTree keeps the shipped list true to the code, so
// that it cannot rot unnoticed: each breakage's text occurs exactly once
// in its file, and its -run pattern names at least one test function in
// each of its packages.
func TestBreakagesApplyToTheTree(t *testing.T) {
	bs, err := load("breakages.json")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "..")
	tests := map[string][]string{} // package directory -> its test functions
	for _, b := range bs {
		src, err := os.ReadFile(filepath.Join(root, b.File))
		if err != nil {
			t.Errorf("%s: %v", b.Name, err)
		} else if _, err := apply(src, b); err != nil {
			t.Errorf("%s: %v", b.Name, err)
		}
		if !regexp.MustCompile(`^(G[1-9]|alerts)$`).MatchString(b.Guarantee) {
			t.Errorf("%s: guarantee %q is not one of docs/design.md's G1-G9, nor alerts", b.Name, b.Guarantee)
		}
		top, err := topPattern(b.Tests)
		if err != nil {
			t.Errorf("%s: tests %q: %v", b.Name, b.Tests, err)
			continue
		}
		for _, pkg := range b.Packages {
			funcs, ok := tests[pkg]
			if !ok {
				funcs = testFuncs(t, filepath.Join(root, pkg))
				tests[pkg] = funcs
			}
			if !slices.ContainsFunc(funcs, top.MatchString) {
				t.Errorf("%s: tests %q match no test function of %s", b.Name, b.Tests, pkg)
			}
		}
	}
}

// topPattern compiles the part of a -run pattern that names top-level
// tests, checking that its subtest parts compile too.
func topPattern(run string) (*regexp.Regexp, error) {
	parts := strings.Split(run, "/")
	for _, p := range parts[1:] {
		if _, err := regexp.Compile(p); err != nil {
			return nil, err
		}
	}
	return regexp.Compile(parts[0])
}

// testFuncs lists the Test and Fuzz functions of the package in dir.
func testFuncs(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(paths) == 0 {
		t.Errorf("%s: no test files (%v)", dir, err)
		return nil
	}
	var funcs []string
	fset := token.NewFileSet()
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			if name := fn.Name.Name; strings.HasPrefix(name, "Test") || strings.HasPrefix(name, "Fuzz") {
				funcs = append(funcs, name)
			}
		}
	}
	return funcs
}
