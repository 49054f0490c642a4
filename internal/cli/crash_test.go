package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxsqlite "github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/source"
)

const crashSecret = "whsec_c2VjcmV0LWZvci1jcmFzaC10ZXN0cw=="

func writeConfig(t *testing.T, dir string) string {
	t.Helper()
	secretFile := dir + "/secret"
	if err := os.WriteFile(secretFile, []byte(crashSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
database: sqlite:%s/hookgate.db
sources:
  - name: app
    provider: standard
    secret: file:%s
`, dir, secretFile)
	path := dir + "/hookgate.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func signer(t *testing.T) *source.Source {
	t.Helper()
	s, err := source.New(config.Source{Name: "app", Provider: "standard", Secret: config.NewSecret(crashSecret)}, config.Default().Dedupe)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func send(ctx context.Context, client *http.Client, src *source.Source, base, id string) (int, error) {
	body := fmt.Appendf(nil, `{"type":"order.created","data":{"n":%q}}`, id)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/in/app", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("webhook-id", id)
	if err := src.Signer().Sign(req, body); err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// G1: every event acknowledged with 202 before a SIGKILL is in the store
// after the restart, and redelivering it is a duplicate. A SIGTERM in the
// middle of the burst is a graceful stop: the requests it took are answered
// (202, never an error) and the process exits cleanly.
func TestCrashKeepsAcknowledgedEvents(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts and kills hookgate processes")
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			burstThenSignal(t, sig)
		})
	}
}

func burstThenSignal(t *testing.T, sig syscall.Signal) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir)
	src := signer(t)
	p := startServe(t, "--config", cfg)

	const senders = 16
	var (
		mu       sync.Mutex
		acked    []string
		accepted atomic.Int64
		wg       sync.WaitGroup
	)
	killAt := int64(400)
	killed := make(chan struct{})
	client := &http.Client{Timeout: 10 * time.Second}
	for g := range senders {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("msg_%d_%d", g, i)
				st, err := send(context.Background(), client, src, p.addr, id)
				if err != nil {
					return // the server is gone
				}
				if st != http.StatusAccepted {
					t.Errorf("%s: status %d before the signal", id, st)
					return
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
				if accepted.Add(1) == killAt {
					close(killed)
				}
			}
		})
	}
	<-killed
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := p.cmd.Wait()
	if sig == syscall.SIGTERM && err != nil {
		t.Errorf("serve after SIGTERM: %v, want a clean exit", err)
	}
	wg.Wait()
	t.Logf("%d events acknowledged before %v", len(acked), sig)

	p2 := startServe(t, "--config", cfg)
	store, err := inboxsqlite.Open(dir+"/hookgate.db", inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	stored := map[string]bool{}
	for before := int64(0); ; {
		page, err := store.List(context.Background(), inbox.Filter{BeforeID: before, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			stored[e.EventID] = true
		}
		before = page[len(page)-1].ID
	}
	for _, id := range acked {
		if !stored[id] {
			t.Errorf("event %s was acknowledged with 202 but is not in the store", id)
		}
	}
	for _, id := range acked {
		st, err := send(context.Background(), client, src, p2.addr, id)
		if err != nil || st != http.StatusOK {
			t.Fatalf("redelivery of %s after restart: %d %v, want 200", id, st, err)
		}
	}

	// A graceful stop answers what it took and exits cleanly.
	if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p2.cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
}
