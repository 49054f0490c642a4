package cli_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/source"
)

// urlSecrets are what a destination's URL carries in its userinfo, its
// path (as Slack's incoming webhooks do) and its query.
var urlSecrets = []string{"PASSWORDSECRET", "PATHSECRET", "QUERYSECRET"}

// secretURL is base (http://host:port) with a token in each of those.
func secretURL(base string) string {
	return strings.Replace(base, "http://", "http://user:PASSWORDSECRET@", 1) + "/services/T000/B000/PATHSECRET?token=QUERYSECRET"
}

// syncBuffer collects a child's output from two pipes at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// G3: a destination's URL is shown as its scheme and host only,
// everywhere. Through a real `hookgate serve`, two destinations whose URLs
// carry a password, a path token and a query token fail (one refuses
// connections, one answers 500 quoting the request) until the event is
// dead for both; no surface shows any of the three tokens: serve's log,
// stats, events show, dead list (text and JSON), /api, /metrics, the
// console's pages and check-config.
func TestDestinationURLShownAsSchemeAndHost(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a hookgate process")
	}
	dir := t.TempDir()
	adminToken, metricsToken := strings.Repeat("a0", 32), strings.Repeat("b1", 32)
	for name, v := range map[string]string{"secret": tieSecret, "admin": adminToken, "metrics": metricsToken} {
		if err := os.WriteFile(dir+"/"+name, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The refusing destination closes every connection unanswered. It
	// keeps its port: a port closed again could be taken by another
	// test's server, which would answer.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	refused := "http://" + l.Addr().String()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "Cannot POST %s (token %s)", r.RequestURI, r.URL.Query().Get("token"))
	}))
	t.Cleanup(echo.Close)
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
database: sqlite:%[1]s/hookgate.db
workers: 1
admin:
  token: file:%[1]s/admin
metrics:
  token: file:%[1]s/metrics
sources:
  - name: stripe
    provider: stripe
    secret: file:%[1]s/secret
    destinations:
      - name: refused
        url: %[2]s
        max_attempts: 2
        retry_initial: 1ms
        pause_after: 2
      - name: broken
        url: %[3]s
        max_attempts: 2
        retry_initial: 1ms
        pause_after: 2
`, dir, secretURL(refused), secretURL(echo.URL))
	path := dir + "/hookgate.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := source.NewSigner(config.Source{Name: "stripe", Provider: "stripe", Secret: config.NewSecret(tieSecret)})
	if err != nil {
		t.Fatal(err)
	}

	var logs syncBuffer
	cmd := command(t, "serve", "--config", path)
	cmd.Stderr = &logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	listening, drained := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				listening <- m[1]
			}
		}
	}()
	var addr string
	select {
	case addr = <-listening:
	case <-time.After(60 * time.Second):
		t.Fatalf("hookgate serve did not start listening within 60s:\n%s", logs.String())
	}

	if st := sendStripe(t, signer, addr, "evt_secret_url", "payment_intent.created", "pi_secret", "requires_payment_method"); st != http.StatusAccepted {
		t.Fatalf("event: %d, want 202", st)
	}
	store := openDB(t, "sqlite:"+dir+"/hookgate.db")
	var ev inbox.Event
	eventually(t, "the event dead for both destinations", func() bool {
		evs, err := store.List(t.Context(), inbox.Filter{Status: inbox.StatusDead})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 1 {
			ev = evs[0]
		}
		return len(evs) == 1
	})
	id := fmt.Sprint(ev.ID)

	surfaces := map[string]string{}
	for _, args := range [][]string{
		{"stats"}, {"stats", "--json"},
		{"events", "show", id}, {"events", "show", "--json", id},
		{"dead", "list"}, {"dead", "list", "--json"},
		{"check-config"},
	} {
		surfaces["hookgate "+strings.Join(args, " ")] = runCLI(t, append(args, "--config", path)...)
	}
	get := func(c *http.Client, path string, header http.Header) string {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	bearer := http.Header{"Authorization": {"Bearer " + adminToken}}
	for _, p := range []string{"/api/stats", "/api/events/" + id, "/api/events", "/api/dead"} {
		surfaces[p] = get(http.DefaultClient, p, bearer)
	}
	surfaces["/metrics"] = get(http.DefaultClient, "/metrics", http.Header{"Authorization": {"Bearer " + metricsToken}})

	console := signIn(t, addr, adminToken)
	for _, p := range []string{"/ui/", "/ui/events", "/ui/events/" + id, "/ui/dead", "/ui/sources"} {
		surfaces[p] = get(console, p, nil)
	}

	// The surfaces do say what failed, and where: a surface that shows
	// nothing of the attempts would pass for the wrong reason.
	for _, s := range []string{"hookgate stats", "hookgate events show " + id, "hookgate dead list", "/api/stats", "/ui/events/" + id} {
		if !strings.Contains(surfaces[s], strings.TrimPrefix(refused, "http://")) {
			t.Errorf("%s does not name the refusing destination's host %s:\n%s", s, refused, surfaces[s])
		}
	}
	if !strings.Contains(surfaces["/metrics"], `destination="refused"`) {
		t.Errorf("/metrics does not name the destinations:\n%s", surfaces["/metrics"])
	}
	if !strings.Contains(surfaces["hookgate check-config"], "url: "+echo.URL+"\n") {
		t.Errorf("check-config does not show the destination as %s:\n%s", echo.URL, surfaces["hookgate check-config"])
	}

	// All of the log is read before Wait closes the pipe.
	cmd.Process.Signal(os.Interrupt)
	<-drained
	cmd.Wait()
	surfaces["serve's log"] = logs.String()
	if !strings.Contains(surfaces["serve's log"], "last_error=") {
		t.Errorf("serve's log has no destination's last error:\n%s", surfaces["serve's log"])
	}
	for name, out := range surfaces {
		for _, s := range urlSecrets {
			if strings.Contains(out, s) {
				t.Errorf("%s shows %s:\n%s", name, s, out)
			}
		}
	}
}

// signIn signs in to the console at addr with the admin token and returns
// a client holding the session.
func signIn(t *testing.T, addr, token string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar}
	resp, err := c.Get(addr + "/ui/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, err := url.Parse(addr + "/ui/login")
	if err != nil {
		t.Fatal(err)
	}
	var csrf string
	for _, ck := range jar.Cookies(u) {
		csrf = ck.Value
	}
	resp, err = c.PostForm(addr+"/ui/login", url.Values{"token": {token}, "csrf": {csrf}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/" {
		t.Fatalf("sign-in: %d at %s, want the overview", resp.StatusCode, resp.Request.URL)
	}
	return c
}
