package main

import (
	"errors"
	"os"
	"path/filepath"
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
		{"ok  \tpkg\t0.1s\n", nil, notCaught},
		{"ok  \tpkg\t0.1s [no tests to run]\n", nil, broken},
		{"FAIL\tpkg [build failed]\n", failed, broken},
	} {
		if got, _ := classify([]byte(c.out), c.err); got != c.result {
			t.Errorf("%q: %s, want %s", c.out, got, c.result)
		}
	}
}

func TestLoadIsStrict(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.json")
	os.WriteFile(path, []byte(`[{"name":"n","file":"f","old":"o","new":"","tests":"T","packages":["./x"],"extra":1}]`), 0o600)
	if _, err := load(path); err == nil {
		t.Fatal("unknown field accepted")
	}
	os.WriteFile(path, []byte(`[{"name":"n","file":"f","old":"","tests":"T","packages":["./x"]}]`), 0o600)
	if _, err := load(path); err == nil {
		t.Fatal("breakage without old text accepted")
	}
	if bs, err := load("breakages.json"); err != nil || len(bs) == 0 {
		t.Fatalf("the shipped list: %d breakages, %v", len(bs), err)
	}
}
