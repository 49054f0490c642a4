package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/pgtest"
	"github.com/hookgate/hookgate/verify"
)

// batchSecret signs the batches hookgate sends.
const batchSecret = "whsec_YmF0Y2gtc2lnbmluZy1zZWNyZXQtZm9yLXRlc3Rz"

// batchSink is the receiver of the batch destinations: it checks each
// batch's signature and count, records per path every batch and each
// event's key every time it comes, and answers per event: on /batch
// reject for the key in reject, retry for the key in retry the first
// time, and ok for the rest.
type batchSink struct {
	*httptest.Server
	t             *testing.T
	verifier      *verify.Standard
	reject, retry string

	mu      sync.Mutex
	batches map[string][]int
	seen    map[string]map[string]int
}

// batchElement is an element of a batch as the receiver reads it.
type batchElement struct {
	WebhookID string     `json:"webhook_id"`
	Type      string     `json:"type"`
	Source    string     `json:"source"`
	Tenant    string     `json:"tenant"`
	Payload   orderEvent `json:"payload"`
}

func newBatchSink(t *testing.T, reject, retry string) *batchSink {
	t.Helper()
	v, err := verify.NewStandard(batchSecret)
	if err != nil {
		t.Fatal(err)
	}
	s := &batchSink{t: t, verifier: v, reject: reject, retry: retry,
		batches: map[string][]int{}, seen: map[string]map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

type batchResult struct {
	WebhookID string `json:"webhook_id"`
	Status    string `json:"status"`
	Error     string `json:"error,omitempty"`
}

func (s *batchSink) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := s.verifier.Verify(r, body); err != nil {
		s.t.Errorf("%s: batch signature: %v", r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var elems []batchElement
	if err := json.Unmarshal(body, &elems); err != nil {
		s.t.Errorf("%s: batch body: %v", r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if n := r.Header.Get(deliver.HeaderBatchCount); n != strconv.Itoa(len(elems)) {
		s.t.Errorf("%s: %s %q for %d events", r.URL.Path, deliver.HeaderBatchCount, n, len(elems))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := r.URL.Path
	s.batches[path] = append(s.batches[path], len(elems))
	if s.seen[path] == nil {
		s.seen[path] = map[string]int{}
	}
	results := make([]batchResult, len(elems))
	for i, e := range elems {
		key := e.Payload.Key
		if e.Source != "app" || e.Type != "" || e.Tenant != "" || e.WebhookID == "" {
			s.t.Errorf("%s: element %+v, want source app, no type or tenant, a webhook id", path, e)
		}
		s.seen[path][key]++
		results[i] = batchResult{WebhookID: e.WebhookID, Status: deliver.ResultOK}
		switch {
		case path != "/batch":
		case key == s.reject:
			results[i] = batchResult{WebhookID: e.WebhookID, Status: deliver.ResultReject, Error: "no such customer"}
		case key == s.retry && s.seen[path][key] == 1:
			results[i] = batchResult{WebhookID: e.WebhookID, Status: deliver.ResultRetry, Error: "row locked"}
		}
	}
	json.NewEncoder(w).Encode(map[string]any{"results": results})
}

// took returns, for path, the batches' sizes and how often each key came.
func (s *batchSink) took(path string) ([]int, map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]int, len(s.seen[path]))
	for k, n := range s.seen[path] {
		seen[k] = n
	}
	return append([]int(nil), s.batches[path]...), seen
}

// batchConfig is the configuration of a batch run: source app's events
// go to the destination batch (max 200, a short wait), and with gather
// to the destination gather too (max 200, a wait that outlasts the run).
func batchConfig(t *testing.T, database string, sink *batchSink, gather bool) string {
	t.Helper()
	dir := t.TempDir()
	secretFile := dir + "/secret"
	if err := os.WriteFile(secretFile, []byte(crashSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	signing := dir + "/signing"
	if err := os.WriteFile(signing, []byte(batchSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	dest := func(name, wait string) string {
		return fmt.Sprintf(`      - name: %s
        url: %s/%s
        secret: file:%s
        batch: {max: 200, wait: %s}
        timeout: 5s
        retry_initial: 50ms
        retry_max_delay: 300ms
        pause_after: 0
`, name, sink.URL, name, signing, wait)
	}
	dests := dest("batch", "200ms")
	if gather {
		dests += dest("gather", "1m")
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
%sworkers: 2
batch: 100
lease: 10s
sources:
  - name: app
    provider: standard
    secret: file:%s
    destinations:
%s`, database, secretFile, dests)
	path := dir + "/hookgate.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runBatch sends 200 events (k0 to k199) to the nodes while the lane of
// destination batch is held, so that all 200 wait in it, then lets it
// go: the receiver rejects k7 and asks once to retry k13. k7 is dead,
// having come once; k13 came twice and is delivered; every other event
// came once and is delivered; each has its attempts logged with the
// batch's status and answer.
func runBatch(t *testing.T, db string, database func(i int) string, nodes int, gather bool) *batchSink {
	t.Helper()
	const events = 200
	sink := newBatchSink(t, "k7", "k13")
	store := openDB(t, db)
	hold := holdLanes(t, store, "batch")
	ps := make([]*process, nodes)
	for i := range ps {
		ps[i] = startServe(t, "--config", batchConfig(t, database(i), sink, gather))
	}
	sendOrdered(t, ps, events, 1)
	hold.release(events)
	waitFor(t, 2*time.Minute, "every event processed or dead", func() bool {
		st, err := store.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		by := st.Sources["app"].ByStatus
		return by[inbox.StatusProcessed] == events-1 && by[inbox.StatusDead] == 1
	})
	_, seen := sink.took("/batch")
	for k := range events {
		key := fmt.Sprintf("k%d", k)
		if want := map[string]int{"k13": 2}[key]; seen[key] != max(want, 1) {
			t.Errorf("/batch took %s %d times, want %d", key, seen[key], max(want, 1))
		}
	}
	dead, err := store.List(t.Context(), inbox.Filter{Status: inbox.StatusDead})
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].EventID != "k7-v1" || !strings.Contains(dead[0].LastError, "no such customer") {
		t.Fatalf("dead events %+v, want k7-v1 alone, with the receiver's reason", dead)
	}
	all, err := store.List(t.Context(), inbox.Filter{Limit: events})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range all {
		log, err := store.Attempts(t.Context(), ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		var batch []inbox.Attempt
		for _, a := range log {
			if a.Destination == "batch" {
				batch = append(batch, a)
			}
		}
		wantErrors := map[string][]string{"k7-v1": {"rejected in batch batch_", "no such customer"}, "k13-v1": {"to retry, says batch batch_", "row locked"}}[ev.EventID]
		if n := map[bool]int{true: 2, false: 1}[ev.EventID == "k13-v1"]; len(batch) != n {
			t.Errorf("%s: %d attempts logged to batch, want %d", ev.EventID, len(batch), n)
			continue
		}
		for i, a := range batch {
			if a.Code != http.StatusOK || !strings.HasPrefix(a.Body, `{"results":`) {
				t.Errorf("%s: attempt %+v, want the batch's 200 and its answer", ev.EventID, a)
			}
			for _, want := range wantErrors {
				if (i == 0) != strings.Contains(a.Error, want) {
					t.Errorf("%s: attempt %d error %q, want %q on the first attempt alone", ev.EventID, i+1, a.Error, want)
				}
			}
			if len(wantErrors) == 0 && a.Error != "" {
				t.Errorf("%s: attempt error %q, want none", ev.EventID, a.Error)
			}
		}
	}
	return sink
}

// Batches through `hookgate serve` on SQLite: the per-event answers of
// runBatch, and on the gather destination, whose wait outlasts the
// run, the 200 events, which reach the node a few at a time, go in one
// batch.
func TestBatchDeliverySQLite(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	db := "sqlite:" + t.TempDir() + "/hookgate.db"
	sink := runBatch(t, db, func(int) string { return "database: " + db + "\n" }, 1, true)
	waitFor(t, time.Minute, "the gathered batch", func() bool {
		batches, _ := sink.took("/gather")
		return len(batches) > 0
	})
	batches, seen := sink.took("/gather")
	if len(batches) != 1 || batches[0] != 200 || len(seen) != 200 {
		t.Errorf("/gather took batches of %v (%d keys), want one of 200: it waits for a full batch", batches, len(seen))
	}
	show := runCLI(t, "events", "show", "k7-v1", "--database", db)
	if !strings.Contains(show, "rejected in batch batch_") || !strings.Contains(show, `{"results":`) {
		t.Errorf("events show k7-v1 does not show the batch's answer:\n%s", show)
	}
}

// Batches from two nodes on PostgreSQL: the per-event answers of
// runBatch, whichever node's batch carried each event.
func TestBatchDeliveryAcrossNodes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts hookgate processes")
	}
	db := pooled(t, pgtest.New(t))
	runBatch(t, db, func(i int) string { return nodeDatabase(t, db, i) }, 2, false)
}
