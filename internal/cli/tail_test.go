package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/cli"
)

// lineWait bounds how long a test waits for a line of a running tail
// before it fails; a line normally comes within a few polls.
const lineWait = 30 * time.Second

// lines sends each line read from r.
func lines(r io.Reader) <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// next returns the next line from ch.
func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("the tail's output ended")
		}
		return l
	case <-time.After(lineWait):
		t.Fatalf("no line from the tail within %s", lineWait)
	}
	return ""
}

// nonEmpty fails the test on an empty write: a pipe's reader (bufio.Scanner
// among them) takes a run of them for a stalled writer and gives up.
type nonEmpty struct {
	t *testing.T
	w io.Writer
}

func (w nonEmpty) Write(b []byte) (int, error) {
	if len(b) == 0 {
		w.t.Error("the tail wrote nothing")
	}
	return w.w.Write(b)
}

// TestEventsTail: a tail prints the newest events it was asked for, then
// each event stored after it started, once, in order, with its filter,
// and writes nothing when nothing came; it returns no error when its
// context ends.
func TestEventsTail(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	d.accept("stripe", "acme", "old_1", "old_2")

	ctx, cancel := context.WithCancel(t.Context())
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		var stderr strings.Builder
		done <- cli.Run(ctx, []string{"events", "tail", "--last", "1", "--interval", "1ms", "--database", "sqlite:" + d.path},
			nil, nonEmpty{t, w}, &stderr)
		w.Close()
	}()
	out := lines(r)
	if l := next(t, out); !strings.Contains(l, "  old_2  ") || strings.Contains(l, "old_1") {
		t.Errorf("first line %q, want the newest event, old_2", l)
	}
	d.accept("stripe", "acme", "new_1", "new_2")
	d.accept("crm", "62515", "new_3")
	for _, want := range []string{"new_1", "new_2", "new_3"} {
		if l := next(t, out); !strings.Contains(l, "  "+want+"  ") {
			t.Errorf("line %q, want event %s", l, want)
		}
	}
	id := d.accept("stripe", "acme", "new_4")[0]
	if l, want := next(t, out), strconv.FormatInt(id, 10)+"  2026-03-01T10:00:00Z  stripe  acme  new_4  -  received"; l != want {
		t.Errorf("line %q, want %q", l, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("tail ended with %v, want nil", err)
	}
}

// TestEventsTailJSON: with --source and --json a tail prints the source's
// events as JSON objects, one per line.
func TestEventsTailJSON(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	d.accept("crm", "62515", "c_0")
	d.accept("stripe", "acme", "old")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r, w := io.Pipe()
	go func() {
		cli.Run(ctx, []string{"events", "tail", "--last", "1", "--source", "crm", "--json", "--interval", "5ms",
			"--database", "sqlite:" + d.path}, nil, w, io.Discard)
		w.Close()
	}()
	out := lines(r)
	// The tail has started once it printed c_0.
	if l := next(t, out); !strings.Contains(l, `"c_0"`) {
		t.Fatalf("first line %q, want c_0", l)
	}
	d.accept("stripe", "acme", "skipped")
	d.accept("crm", "62515", "c_1", "c_2")
	for _, want := range []string{"c_1", "c_2"} {
		var v struct {
			EventID string `json:"event_id"`
			Source  string `json:"source"`
			Status  string `json:"status"`
		}
		l := next(t, out)
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.EventID != want || v.Source != "crm" || v.Status != "received" {
			t.Errorf("line %q (%v), want crm's %s as JSON", l, err, want)
		}
	}
}

// TestEventsTailInterrupt: a tail running as its own process stops on
// SIGINT with exit status 0 and nothing on stderr.
func TestEventsTailInterrupt(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	d.accept("stripe", "acme", "evt_1")
	cmd := command(t, "events", "tail", "--interval", "5ms", "--database", "sqlite:"+d.path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	// The first line comes after the signal handler is in place.
	if l := next(t, lines(stdout)); !strings.Contains(l, "evt_1") {
		t.Fatalf("first line %q", l)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil || stderr.Len() > 0 {
		t.Errorf("tail after SIGINT: %v, stderr %q; want exit status 0 and no output", err, stderr.String())
	}
}
