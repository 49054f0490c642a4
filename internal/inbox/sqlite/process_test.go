package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
)

// The parent test re-executes the test binary as leaser processes; these
// variables tell a leaser where the database is, where to write the ids it
// leased and which leaser it is.
const (
	leaserDBEnv  = "HOOKGATE_INBOX_LEASER_DB"
	leaserOutEnv = "HOOKGATE_INBOX_LEASER_OUT"
	leaserIDEnv  = "HOOKGATE_INBOX_LEASER_ID"
	leaserReady  = "leaser ready"
)

const (
	leasers          = 2
	leaserGoroutines = 4
	leasedEvents     = 400
)

// TestLeaseAcrossProcesses leases the events of one file from two OS
// processes at once, each with several goroutines, until none is due:
// every event must be leased exactly once across all of them.
func TestLeaseAcrossProcesses(t *testing.T) {
	if path := os.Getenv(leaserDBEnv); path != "" {
		runLeaser(t, path, os.Getenv(leaserOutEnv), os.Getenv(leaserIDEnv))
		return
	}
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "inbox.db")
	s, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	items := make([]inbox.Item, leasedEvents)
	for i := range items {
		items[i] = testItem(strconv.Itoa(i))
	}
	accepted, err := s.Accept(t.Context(), items)
	if err != nil {
		t.Fatal(err)
	}

	type leaser struct {
		cmd    *exec.Cmd
		out    string
		stdin  io.WriteCloser
		stdout *bufio.Reader
		logs   bytes.Buffer
	}
	ls := make([]*leaser, leasers)
	for i := range ls {
		l := &leaser{out: filepath.Join(dir, fmt.Sprintf("leaser%d.json", i))}
		l.cmd = exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestLeaseAcrossProcesses$", "-test.count=1")
		l.cmd.Env = append(os.Environ(), leaserDBEnv+"="+path, leaserOutEnv+"="+l.out, leaserIDEnv+"="+strconv.Itoa(i))
		l.cmd.Stderr = &l.logs
		if l.stdin, err = l.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := l.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		l.stdout = bufio.NewReader(stdout)
		if err := l.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ls[i] = l
	}
	// Release the leasers together once both have opened the database.
	for i, l := range ls {
		line, err := l.stdout.ReadString('\n')
		if line != leaserReady+"\n" {
			rest, _ := io.ReadAll(l.stdout)
			t.Fatalf("leaser %d: first line %q (%v), want %q; output:\n%s%s\n%s", i, line, err, leaserReady, line, rest, l.logs.String())
		}
	}
	for _, l := range ls {
		l.stdin.Close()
	}

	var all []int64
	for i, l := range ls {
		rest, _ := io.ReadAll(l.stdout)
		if err := l.cmd.Wait(); err != nil {
			t.Fatalf("leaser %d: %v; output:\n%s\n%s", i, err, rest, l.logs.String())
		}
		data, err := os.ReadFile(l.out)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		t.Logf("leaser %d leased %d events", i, len(got))
		all = append(all, got...)
	}
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Errorf("event %d leased twice", all[i])
		}
	}
	want := make([]int64, len(accepted))
	for i, o := range accepted {
		want[i] = o.ID
	}
	slices.Sort(want)
	if !slices.Equal(slices.Compact(all), want) {
		t.Fatalf("leased %d distinct events, want all %d", len(slices.Compact(all)), len(want))
	}
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Sources["shop"].ByStatus[inbox.StatusProcessed]; n != leasedEvents || st.Pending != 0 {
		t.Errorf("%d processed, %d pending; want %d and 0", n, st.Pending, leasedEvents)
	}
}

// runLeaser is the body of one leaser process: it opens the database, says
// it is ready, waits for the parent to close its stdin, then leases and
// finishes batches of random size from several goroutines until nothing is
// due, and writes the ids it leased to out.
func runLeaser(t *testing.T, path, out, id string) {
	s, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fmt.Println(leaserReady)
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got = []int64{}
	)
	for g := range leaserGoroutines {
		rng := rand.New(rand.NewPCG(n, uint64(g)))
		owner := fmt.Sprintf("p%s-g%d", id, g)
		wg.Go(func() {
			for {
				evs, err := leaseAndFinish(t.Context(), s, owner, 1+rng.IntN(8))
				if err != nil {
					t.Error(err)
					return
				}
				if len(evs) == 0 {
					return
				}
				mu.Lock()
				got = append(got, evs...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	data, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// leaseAndFinish leases up to n events for owner and finishes them
// processed, returning their ids.
func leaseAndFinish(ctx context.Context, s *sqlite.Store, owner string, n int) ([]int64, error) {
	evs, err := s.Lease(ctx, owner, n, time.Hour)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(evs))
	results := make([]inbox.Result, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
		results[i] = inbox.Result{ID: e.ID, Status: inbox.StatusProcessed}
	}
	return ids, s.Finish(ctx, owner, results)
}
