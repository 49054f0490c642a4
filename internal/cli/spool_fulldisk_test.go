package cli_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hookgate/hookgate/internal/pgtest"
)

// startServeLogs is startServe with the child's stderr lines also sent to
// the returned channel (lines that find it full are only logged).
func startServeLogs(t *testing.T, args ...string) (*process, <-chan string) {
	t.Helper()
	cmd := command(t, append([]string{"serve"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
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
	logs := make(chan string, 1000)
	go func() {
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			t.Logf("serve: %s", lines.Text())
			select {
			case logs <- lines.Text():
			default:
			}
		}
	}()
	found := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if m := listenLine.FindStringSubmatch(lines.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case p.addr = <-found:
	case <-time.After(60 * time.Second):
		t.Fatal("hookgate serve did not start listening within 60s")
	}
	return p, logs
}

// setFileLimit sets the file size limit (RLIMIT_FSIZE) of the process
// pid: at 0 every write it makes to a file fails, as on a full disk.
func setFileLimit(t *testing.T, pid int, limit uint64) {
	t.Helper()
	var cur unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &cur); err != nil {
		t.Fatal(err)
	}
	cur.Cur = min(limit, cur.Max)
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &cur, nil); err != nil {
		t.Fatal(err)
	}
}

// G4 with a full spool disk after the outage: a node spools 20 events
// while PostgreSQL is cut; its disk is full (a file size limit of 0 on
// the serve process) when the database comes back. The node takes a new
// event into the database, and its drain cannot mark the spooled batch
// offered, so it offers nothing: no spooled event reaches the database
// while the disk is full, and none twice. Once the disk has room the
// spool drains, every event is stored once, the database counts no
// duplicate and reconcile reports 20 drained, none a duplicate.
func TestSpoolDrainsOnceTheDiskHasRoom(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	db := pgtest.New(t)
	proxy, viaProxy := pgtest.NewProxy(t, db)
	path := t.TempDir() + "/spool.db"
	p, logs := startServeLogs(t, "--config", spoolNodeConfig(t, viaProxy, path, 0))
	store := openDB(t, db)
	src := signer(t)
	client := &http.Client{Timeout: 10 * time.Second}

	proxy.Cut()
	for i := range 20 {
		if st, err := send(t.Context(), client, src, p.addr, fmt.Sprintf("msg_spooled_%d", i)); err != nil || st != http.StatusAccepted {
			t.Fatalf("event %d while PostgreSQL is cut: %d %v, want 202", i, st, err)
		}
	}
	setFileLimit(t, p.cmd.Process.Pid, 0)
	proxy.Restore()
	// The spool cannot take a new event now (a 503 while the node still
	// tries it first); the database takes the first 202.
	tries := 0
	eventually(t, "a new event to be stored in the database", func() bool {
		tries++
		st, err := send(t.Context(), client, src, p.addr, fmt.Sprintf("msg_after_%d", tries))
		return err == nil && st == http.StatusAccepted
	})
	failed := 0
	eventually(t, "three failed drains to be logged", func() bool {
		for {
			select {
			case line := <-logs:
				if strings.Contains(line, "draining the spool") {
					failed++
				}
			default:
				return failed >= 3
			}
		}
	})
	if n := storedRows(t, store); n != 1 {
		t.Fatalf("%d events in the database while the spool's disk is full, want 1 (the new one)", n)
	}

	setFileLimit(t, p.cmd.Process.Pid, unix.RLIM_INFINITY)
	eventually(t, "the spool to drain once the disk has room", func() bool { return reconcile(t, path).Spools[0].Waiting == 0 })
	if n := storedRows(t, store); n != 21 {
		t.Fatalf("%d events in the database, want 21", n)
	}
	st, err := store.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if d := st.Sources["app"].Duplicates; d != 0 {
		t.Fatalf("the database counts %d duplicates, want 0", d)
	}
	if r := reconcile(t, path).Spools[0]; r.Spooled != 20 || r.Drained != 20 || r.Duplicates != 0 {
		t.Fatalf("reconcile: %+v; want 20 spooled and drained, no duplicate", r)
	}
}
