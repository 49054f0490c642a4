package spool_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/spool"
)

// One node per spool file: a second Open of a held spool fails, naming
// the file and the holder's pid; a report (hookgate reconcile) opens it
// anyway; once the holder closes it, the next node takes it.
func TestOneNodePerSpool(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "spool.db")
	s := openSpool(t, path)
	_, err := spool.Open(t.Context(), path, spool.Options{})
	if !errors.Is(err, spool.ErrLocked) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second open: %v, want ErrLocked naming %s and pid %d", err, path, os.Getpid())
	}
	r, err := spool.Open(t.Context(), path, spool.Options{Report: true})
	if err != nil {
		t.Fatalf("report open beside the node: %v", err)
	}
	if _, err := r.Stats(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Put(t.Context(), nil); err == nil {
		t.Fatal("a report spool took a Put")
	}
	r.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	next, err := spool.Open(t.Context(), path, spool.Options{})
	if err != nil {
		t.Fatalf("open after the holder closed: %v", err)
	}
	next.Close()
}
