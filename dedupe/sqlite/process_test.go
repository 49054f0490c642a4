package sqlite_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/sqlite"
)

// The parent test re-executes the test binary as racer processes; these
// variables tell a racer where the database is, where to write what it saw
// and which racer it is.
const (
	racerDBEnv  = "HOOKGATE_SQLITE_RACER_DB"
	racerOutEnv = "HOOKGATE_SQLITE_RACER_OUT"
	racerIDEnv  = "HOOKGATE_SQLITE_RACER_ID"
)

const (
	racers          = 3
	racerGoroutines = 4
	racedKeys       = 64
	racerReady      = "racer ready"
)

// claimSeen is one claim result a racer reports to the parent.
type claimSeen struct {
	Hash   dedupe.Hash
	Status dedupe.Status
	Token  dedupe.Token
}

// committed reports whether racers commit the key they win; the others keep
// their leases, so they must never come back Duplicate.
func committed(h dedupe.Hash) bool {
	return h[0]%2 == 0
}

// TestClaimRaceAcrossProcesses races claims of the same keys from several
// OS processes on one database file, each with several goroutines: every
// key must be New exactly once across all of them.
func TestClaimRaceAcrossProcesses(t *testing.T) {
	if path := os.Getenv(racerDBEnv); path != "" {
		runRacer(t, path, os.Getenv(racerOutEnv), os.Getenv(racerIDEnv))
		return
	}
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "race.db")
	s, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	type racer struct {
		cmd    *exec.Cmd
		out    string
		stdin  io.WriteCloser
		stdout *bufio.Reader
		logs   bytes.Buffer
	}
	rs := make([]*racer, racers)
	for i := range rs {
		r := &racer{out: filepath.Join(dir, fmt.Sprintf("racer%d.json", i))}
		r.cmd = exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestClaimRaceAcrossProcesses$", "-test.count=1")
		r.cmd.Env = append(os.Environ(), racerDBEnv+"="+path, racerOutEnv+"="+r.out, racerIDEnv+"="+strconv.Itoa(i))
		r.cmd.Stderr = &r.logs
		if r.stdin, err = r.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := r.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		r.stdout = bufio.NewReader(stdout)
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		rs[i] = r
	}
	// Release the racers together once all have opened the database.
	for i, r := range rs {
		line, err := r.stdout.ReadString('\n')
		if line != racerReady+"\n" {
			rest, _ := io.ReadAll(r.stdout)
			t.Fatalf("racer %d: first line %q (%v), want %q; output:\n%s%s\n%s", i, line, err, racerReady, line, rest, r.logs.String())
		}
	}
	for _, r := range rs {
		r.stdin.Close()
	}

	news := map[dedupe.Hash]dedupe.Token{}
	for i, r := range rs {
		rest, _ := io.ReadAll(r.stdout)
		if err := r.cmd.Wait(); err != nil {
			t.Fatalf("racer %d: %v; output:\n%s\n%s", i, err, rest, r.logs.String())
		}
		data, err := os.ReadFile(r.out)
		if err != nil {
			t.Fatal(err)
		}
		var seen []claimSeen
		if err := json.Unmarshal(data, &seen); err != nil {
			t.Fatal(err)
		}
		if want := racerGoroutines * racedKeys; len(seen) != want {
			t.Fatalf("racer %d reported %d claims, want %d", i, len(seen), want)
		}
		won := 0
		for _, c := range seen {
			switch {
			case c.Status == dedupe.New:
				won++
				if _, dup := news[c.Hash]; dup {
					t.Errorf("key %s: New in two claims", c.Hash)
				}
				news[c.Hash] = c.Token
			case c.Status == dedupe.Duplicate && !committed(c.Hash):
				t.Errorf("key %s: Duplicate, but its winner never committed it", c.Hash)
			}
		}
		t.Logf("racer %d won %d of %d keys", i, won, racedKeys)
	}
	if len(news) != racedKeys {
		t.Fatalf("%d of %d keys were New somewhere, want all", len(news), racedKeys)
	}

	// The file agrees with the winners: committing their leases again, and
	// the held ones for the first time, finds each key under its winner's
	// token.
	leases := make([]dedupe.Lease, 0, len(news))
	for h, tok := range news {
		leases = append(leases, dedupe.Lease{Hash: h, Token: tok})
	}
	if err := s.Commit(t.Context(), window, leases...); err != nil {
		t.Fatalf("committing the winners' leases: %v", err)
	}
}

// runRacer is the body of one racer process: it opens the database, says it
// is ready, waits for the parent to close its stdin, then claims every key
// from several goroutines in batches of random size and random order.
func runRacer(t *testing.T, path, out, id string) {
	s, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fmt.Println(racerReady)
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen []claimSeen
	)
	for g := range racerGoroutines {
		rng := rand.New(rand.NewPCG(n, uint64(g)))
		order := rng.Perm(racedKeys)
		wg.Go(func() {
			for len(order) > 0 {
				size := min(1+rng.IntN(8), len(order))
				batch := make([]dedupe.Hash, size)
				for i, k := range order[:size] {
					batch[i] = hash(k)
				}
				order = order[size:]
				results, err := s.Claim(t.Context(), lease, batch...)
				if err != nil {
					t.Error(err)
					return
				}
				var won []dedupe.Lease
				mu.Lock()
				for i, r := range results {
					seen = append(seen, claimSeen{Hash: batch[i], Status: r.Status, Token: r.Lease.Token})
					if r.Status == dedupe.New && committed(batch[i]) {
						won = append(won, r.Lease)
					}
				}
				mu.Unlock()
				if err := s.Commit(t.Context(), window, won...); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	data, err := json.Marshal(seen)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
