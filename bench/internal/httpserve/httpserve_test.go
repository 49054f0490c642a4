package httpserve

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})
	go func() {
		done <- Run(ctx, "127.0.0.1:0", h, pw)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("read announcement: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		t.Fatalf("announcement %q, want listening on http://127.0.0.1:PORT", line)
	}
	client := &http.Client{Transport: &http.Transport{}}
	resp, err := client.Get(url + "/")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	resp.Body.Close()
	client.CloseIdleConnections()
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("status %d, want %d", resp.StatusCode, http.StatusTeapot)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
}

func TestRunListenError(t *testing.T) {
	t.Parallel()
	if err := Run(context.Background(), "127.0.0.1:not-a-port", http.NotFoundHandler(), io.Discard); err == nil {
		t.Error("Run with a bad address = nil, want an error")
	}
}
