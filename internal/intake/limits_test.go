package intake_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/source"
)

// Issue 9, finding 2: bodies held before authentication share one budget.
// While a slow sender holds it, another request is answered 503 with
// Retry-After before its body is read; once the slow body ends (401: it
// is unsigned) the budget is back.
func TestPendingBodyBudget(t *testing.T) {
	t.Parallel()
	src, err := source.New(testSources()[2], config.Default().Dedupe)
	if err != nil {
		t.Fatal(err)
	}
	c := intake.NewCommitter(openStore(t), intake.CommitterOptions{})
	defer c.Close()
	const maxBody = 1024
	srv := httptest.NewServer(intake.NewHandler(intake.Options{Sources: []*source.Source{src}, Committer: c,
		MaxBody: maxBody, MaxPendingBody: maxBody}))
	defer srv.Close()

	slow, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "POST /in/stripe HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", maxBody, strings.Repeat("a", 10))

	post := func() *http.Response {
		resp, err := http.Post(srv.URL+"/in/stripe", "application/json", bytes.NewReader([]byte(`{"id":"evt_1"}`)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// The slow request holds the budget once the handler has started it.
	deadline := time.Now().Add(10 * time.Second)
	var resp *http.Response
	for resp = post(); resp.StatusCode != http.StatusServiceUnavailable; resp = post() {
		if time.Now().After(deadline) {
			t.Fatalf("while a slow body holds the budget: %d, want 503", resp.StatusCode)
		}
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	fmt.Fprint(slow, strings.Repeat("a", maxBody-10))
	line, err := bufio.NewReader(slow).ReadString('\n')
	if err != nil || !strings.Contains(line, "401") {
		t.Fatalf("the slow request: %q %v, want 401", line, err)
	}
	if resp := post(); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after the slow body ended: %d, want 401 (the budget given back)", resp.StatusCode)
	}
}
