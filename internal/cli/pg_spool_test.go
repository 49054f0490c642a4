package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/pgtest"
)

// G4 with dedupe.on_store_error: spool. Two nodes lose their PostgreSQL
// in the middle of traffic: a burst of 2,000 requests over both, a fifth of
// them redeliveries (of events stored before the outage too), is answered
// 202 or 200, never 503, each node ready but "degraded: spooling"; one node
// is killed with SIGKILL while it spools. When the database is back and the
// killed node restarted on the same spool file, both spools drain: every
// acknowledged event is stored once and delivered to the destination once
// (one webhook-id, never twice), and `hookgate reconcile` reports the
// spools drained, with the copies the database already held found
// duplicate at drain.
func TestSpoolRidesOutPostgresOutage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts and kills hookgate processes")
	}
	dest := newSink(t)
	db := pgtest.New(t)
	proxy, viaProxy := pgtest.NewProxy(t, pooled(t, db))
	dir := t.TempDir()
	spoolOf := func(i int) string { return fmt.Sprintf("%s/spool%d.db", dir, i) }
	paths := nodeConfigs(t, viaProxy, 2, dest.URL, func(i int) string {
		return fmt.Sprintf("dedupe:\n  on_store_error: spool\n  spool: %s\n", spoolOf(i))
	})
	ps := []*process{startServe(t, "--config", paths[0]), startServe(t, "--config", paths[1])}
	store := openDB(t, db)
	src := signer(t)
	client := &http.Client{Timeout: 10 * time.Second}

	// 200 events stored and delivered before the outage.
	before := make([]string, 200)
	for i := range before {
		before[i] = fmt.Sprintf("msg_before_%d", i)
		if st, err := send(t.Context(), client, src, ps[i%2].addr, before[i]); err != nil || st != http.StatusAccepted {
			t.Fatalf("%s before the outage: %d %v, want 202", before[i], st, err)
		}
	}
	eventually(t, "the events before the outage to be processed", func() bool {
		st, err := store.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return st.Pending == 0
	})

	proxy.Cut()
	var killed atomic.Bool
	res := sendBurst(t, burstOptions{
		senders: 8, requests: 2000, redeliver: before,
		pick: func() string {
			if killed.Load() {
				return ps[1].addr
			}
			return ps[rand.IntN(len(ps))].addr
		},
		at: 1000,
		mid: func() {
			for _, p := range ps {
				if st, body := readyz(t, p.addr); st != http.StatusOK || !strings.HasPrefix(body, "degraded: spooling") {
					t.Errorf("%s/readyz while spooling: %d %q, want 200 degraded: spooling", p.addr, st, body)
				}
			}
			killed.Store(true)
			if err := ps[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Error(err)
			}
		},
		gone: func(addr string) bool { return killed.Load() && addr == ps[0].addr },
	})
	if t.Failed() {
		t.FailNow() // the burst stopped short: what follows needs its outage and kill
	}
	ps[0].cmd.Wait()
	spooledBefore := 0 // copies of events stored before the outage, taken into a spool
	for _, id := range before {
		spooledBefore += res.accepted[id]
	}
	t.Logf("during the outage: answers %v, %d redeliveries; %d copies of events stored before it spooled", res.answers, res.redeliveries, spooledBefore)

	proxy.Restore()
	ps[0] = startServe(t, "--config", paths[0])
	var stored map[string]int
	deadline := time.Now().Add(90 * time.Second)
	for {
		st, err := store.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		stored = storedEvents(t, store)
		missing := 0
		for id := range res.acked {
			if stored[id] == 0 {
				missing++
			}
		}
		if missing == 0 && st.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90s: %d acknowledged events not stored, %d pending", missing, st.Pending)
		}
		time.Sleep(100 * time.Millisecond)
	}
	res.check(t, stored)
	// Each node's spool accepts a copy once; two nodes' spools cannot know
	// each other's, so a copy spooled on both is answered 202 twice and
	// the database keeps one at drain.
	for on, n := range res.acceptedOn {
		if n > 1 {
			t.Errorf("%s: accepted (202) %d times by one node", on, n)
		}
	}

	keys := map[string]string{} // event id -> webhook-id
	eachStored(t, store, func(e inbox.Event) {
		keys[e.EventID] = e.Hash.String()
		if e.Status != inbox.StatusProcessed {
			t.Errorf("event %s is %s, want processed", e.EventID, e.Status)
		}
	})
	delivered := dest.counts()
	for id := range res.accepted {
		if n := delivered[keys[id]]; n != 1 {
			t.Errorf("event %s (acknowledged 202) delivered %d times, want once", id, n)
		}
	}
	for key, n := range delivered {
		if n != 1 {
			t.Errorf("webhook-id %s delivered %d times, want once", key, n)
		}
	}
	if len(delivered) != len(stored) {
		t.Errorf("%d webhook-ids delivered for %d stored events", len(delivered), len(stored))
	}

	for _, p := range ps {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("serve after SIGTERM: %v", err)
		}
	}
	var out bytes.Buffer
	if err := cli.Run(t.Context(), []string{"reconcile", "--spool", spoolOf(0), "--spool", spoolOf(1), "--json"}, strings.NewReader(""), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Spools []struct {
			Path                      string
			Spooled, Drained, Waiting int64
			Duplicates                int64 `json:"duplicates_at_drain"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("reconcile --json: %v\n%s", err, out.Bytes())
	}
	var spooled, drained, dupes int64
	for _, s := range rep.Spools {
		t.Logf("reconcile %s: spooled %d, drained %d, duplicates at drain %d, waiting %d", s.Path, s.Spooled, s.Drained, s.Duplicates, s.Waiting)
		if s.Waiting != 0 || s.Drained != s.Spooled || s.Spooled == 0 {
			t.Errorf("spool %s: spooled %d, drained %d, waiting %d; want some spooled, all drained, none waiting", s.Path, s.Spooled, s.Drained, s.Waiting)
		}
		spooled, drained, dupes = spooled+s.Spooled, drained+s.Drained, dupes+s.Duplicates
	}
	if len(rep.Spools) != 2 {
		t.Fatalf("reconcile reports %d spools, want 2:\n%s", len(rep.Spools), out.Bytes())
	}
	if dupes < int64(spooledBefore) {
		t.Errorf("%d duplicates at drain, want at least the %d spooled copies of events stored before the outage", dupes, spooledBefore)
	}
	t.Logf("%d events acknowledged, %d stored and each delivered once; spools: %d spooled, %d drained, %d duplicates at drain", len(res.acked), len(stored), spooled, drained, dupes)
}

// readyz returns the status and body of the node at addr's /readyz. It
// may be called from any goroutine: it fails t with Error, and returns 0.
func readyz(t *testing.T, addr string) (int, string) {
	t.Helper()
	resp, err := http.Get(addr + "/readyz")
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	return resp.StatusCode, string(b)
}
