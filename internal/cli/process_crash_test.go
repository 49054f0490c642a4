package cli_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
	inboxsqlite "github.com/hookgate/hookgate/internal/inbox/sqlite"
)

// G1, G8: kill -9 while events are being delivered; after a restart every
// accepted event is processed, and an event delivered twice carried the
// same webhook-id both times.
func TestCrashDuringProcessing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts and kills hookgate processes")
	}
	var (
		mu        sync.Mutex
		delivered = map[string]int{} // webhook-id -> deliveries
		total     int
	)
	dest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		delivered[r.Header.Get("webhook-id")]++
		total++
		mu.Unlock()
		time.Sleep(2 * time.Millisecond) // a real application takes a moment
		w.WriteHeader(http.StatusNoContent)
	}))
	defer dest.Close()

	dir := t.TempDir()
	secretFile := dir + "/secret"
	if err := os.WriteFile(secretFile, []byte(crashSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := dir + "/hookgate.yaml"
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
database: sqlite:%s/hookgate.db
workers: 2
batch: 20
lease: 2s
sources:
  - name: app
    provider: standard
    secret: file:%s
    destinations:
      - name: sink
        url: %s/hooks
        timeout: 1s
`, dir, secretFile, dest.URL)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	src := signer(t)
	p := startServe(t, "--config", cfgPath)
	const events = 400
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range events {
		st, err := send(context.Background(), client, src, p.addr, fmt.Sprintf("msg_p%d", i))
		if err != nil || st != http.StatusAccepted {
			t.Fatalf("event %d: %d %v", i, st, err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := total
		mu.Unlock()
		if n >= events/4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d deliveries within 30s", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()

	startServe(t, "--config", cfgPath)
	store, err := inboxsqlite.Open(dir+"/hookgate.db", inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	deadline = time.Now().Add(60 * time.Second)
	for {
		st, err := store.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Sources["app"].ByStatus[inbox.StatusProcessed] == events {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after restart: %v, want all %d processed", st.Sources["app"].ByStatus, events)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(delivered) != events {
		t.Fatalf("%d distinct webhook-ids delivered, want one per event (%d)", len(delivered), events)
	}
	twice := 0
	for _, n := range delivered {
		if n > 1 {
			twice++
		}
	}
	t.Logf("%d deliveries for %d events; %d events delivered more than once, each under one webhook-id", total, events, twice)
}
