package console_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/console"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/server"
	"github.com/hookgate/hookgate/internal/source"
)

// ScreenshotEnv names a file the browser test writes its screenshot of
// the overview to (docs/console-overview.png is made this way).
const ScreenshotEnv = "HOOKGATE_CONSOLE_SCREENSHOT"

// app is the application the gateway delivers to: it refuses events whose
// body holds "evt_bad" (400, for good) while refusing is set, and takes
// everything else.
type app struct {
	refusing atomic.Bool
	mu       sync.Mutex
	took     []string
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if a.refusing.Load() && bytes.Contains(body, []byte("evt_bad")) {
		http.Error(w, "order <b>not</b> found", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.took = append(a.took, string(body))
	a.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (a *app) tookWith(s string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range a.took {
		if strings.Contains(b, s) {
			return true
		}
	}
	return false
}

// gateway is a real intake, store, workers and console on one socket.
type gateway struct {
	url   string
	store *sqlite.Store
	src   *source.Source
}

// startGateway serves what `hookgate serve` serves with a console mounted
// at /ui/: one Stripe source delivering to dest, processed by workers.
func startGateway(t *testing.T, dest string) *gateway {
	t.Helper()
	cfg := config.Default()
	cfg.Workers = 2
	cfg.Admin.Token = config.NewSecret(token)
	cfg.Sources = []config.Source{{
		Name: "stripe", Provider: "stripe", Secret: config.NewSecret("whsec_browser_test"),
		Window: config.Duration(time.Hour),
		Destinations: []config.Destination{config.Destination{Name: "app", URL: dest + "/hooks",
			Timeout: config.Duration(5 * time.Second), MaxAttempts: 1}.WithDefaults()},
	}}
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "hookgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := server.New(cfg, server.Options{Store: store, Idle: 20 * time.Millisecond,
		BackoffBase: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var srv *httptest.Server
	ui, err := console.New(console.Options{Store: store, Token: cfg.Admin.Token.Value(), Sources: cfg.Sources,
		Intake: func() string { return srv.Listener.Addr().String() }, TailEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui)
	mux.Handle("/", gw.Handler())
	srv = httptest.NewServer(mux)
	done := make(chan error, 1)
	go func() { done <- gw.Run(ctx) }()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		gw.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("workers: %v", err)
		}
		store.Close()
	})
	return &gateway{url: srv.URL, store: store, src: gw.Sources()[0]}
}

// send posts a signed Stripe event through the intake and wants code.
func (g *gateway) send(t *testing.T, id, status string, code int) {
	t.Helper()
	body := fmt.Appendf(nil, `{"id":%q,"object":"event","type":"charge.updated","created":%d,"data":{"object":{"id":"ch_%s","object":"charge","status":%q,"note":"<script>alert(1)</script>"}}}`,
		id, time.Now().Unix(), id, status)
	req, err := http.NewRequest(http.MethodPost, g.url+"/in/stripe", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.src.Signer().Sign(req, body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != code {
		t.Fatalf("send %s = %d, want %d", id, resp.StatusCode, code)
	}
}

// eventID returns the inbox id of the stored event with provider id id.
func (g *gateway) eventID(t *testing.T, id string) (int64, inbox.Status) {
	t.Helper()
	events, err := g.store.List(t.Context(), inbox.Filter{Source: "stripe", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.EventID == id {
			return e.ID, e.Status
		}
	}
	t.Fatalf("no event %s stored", id)
	return 0, ""
}

// browser starts headless Chromium for the test; without it the test
// skips, or fails when HOOKGATE_REQUIRE_SERVICES=1.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("HOOKGATE_REQUIRE_SERVICES") == "1" {
			t.Fatalf("chromium is required (HOOKGATE_REQUIRE_SERVICES=1): %v", err)
		}
		t.Skipf("no chromium to drive: %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc()
	})
	return ctx
}

// step runs browser actions and fails the test on an error.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// click clicks sel and waits for the page it loads.
func click(t *testing.T, ctx context.Context, what string, sel chromedp.CSS) {
	t.Helper()
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(sel)); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitText waits until the page's text holds s.
func waitText(t *testing.T, ctx context.Context, s string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.innerText.includes(`+strconv.Quote(s)+`)`,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %q on the page: %v\n%s", s, err, body)
	}
}

// screenshot saves the page as a PNG under dir.
func screenshot(t *testing.T, ctx context.Context, dir, name string) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	return png
}

// In a real browser: sign in, send signed events through the intake, see
// them in the live tail and the list, open one, replay a dead one after
// the application is fixed, and see it delivered.
func TestBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	dest := &app{}
	dest.refusing.Store(true)
	destSrv := httptest.NewServer(dest)
	t.Cleanup(destSrv.Close)
	g := startGateway(t, destSrv.URL)
	shots := t.TempDir()

	step(t, ctx, "open the console", chromedp.Navigate(g.url+"/ui/tail"))
	waitText(t, ctx, "Admin token")
	step(t, ctx, "type the token", chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), token))
	click(t, ctx, "sign in", chromedp.CSS(`form.login button`))
	waitText(t, ctx, "Following")
	screenshot(t, ctx, shots, "tail-empty")

	g.send(t, "evt_ok_1", "succeeded", http.StatusAccepted)
	g.send(t, "evt_bad", "failed", http.StatusAccepted)
	g.send(t, "evt_ok_2", "succeeded", http.StatusAccepted)
	g.send(t, "evt_ok_1", "succeeded", http.StatusOK)
	for _, id := range []string{"evt_ok_1", "evt_bad", "evt_ok_2"} {
		waitText(t, ctx, id)
	}
	screenshot(t, ctx, shots, "tail")

	step(t, ctx, "open the list", chromedp.Navigate(g.url+"/ui/events"))
	for _, id := range []string{"evt_ok_1", "evt_bad", "evt_ok_2"} {
		waitText(t, ctx, id)
	}
	bad, _ := g.eventID(t, "evt_bad")
	waitFor(t, "evt_bad dead", func() bool { _, st := g.eventID(t, "evt_bad"); return st == inbox.StatusDead })
	waitFor(t, "the others processed", func() bool {
		_, a := g.eventID(t, "evt_ok_1")
		_, b := g.eventID(t, "evt_ok_2")
		return a == inbox.StatusProcessed && b == inbox.StatusProcessed
	})

	step(t, ctx, "open the dead list", chromedp.Navigate(g.url+"/ui/dead"))
	waitText(t, ctx, "evt_bad")
	click(t, ctx, "open the dead event", chromedp.CSS(fmt.Sprintf(`a[href="/ui/events/%d"]`, bad)))
	waitText(t, ctx, "provider event id")
	waitText(t, ctx, "order <b>not</b> found")
	waitText(t, ctx, `"note": "<script>alert(1)</script>"`)
	screenshot(t, ctx, shots, "event-dead")

	dest.refusing.Store(false)
	click(t, ctx, "ask for the replay", chromedp.CSS(`#replay button`))
	waitText(t, ctx, "This replays 1 event(s)")
	click(t, ctx, "confirm the replay", chromedp.CSS(`#confirm button`))
	waitText(t, ctx, "Replayed 1 event(s)")
	waitFor(t, "evt_bad delivered", func() bool { return dest.tookWith("evt_bad") })
	waitFor(t, "evt_bad processed", func() bool { _, st := g.eventID(t, "evt_bad"); return st == inbox.StatusProcessed })

	step(t, ctx, "open the replayed event", chromedp.Navigate(fmt.Sprintf("%s/ui/events/%d", g.url, bad)))
	waitText(t, ctx, "delivered")
	screenshot(t, ctx, shots, "event-delivered")

	step(t, ctx, "open the overview", chromedp.Navigate(g.url+"/ui/"))
	waitText(t, ctx, "hit rate")
	waitText(t, ctx, "received 3")
	waitText(t, ctx, "duplicates 1")
	png := screenshot(t, ctx, shots, "overview")
	if path := os.Getenv(ScreenshotEnv); path != "" {
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Pause the destination from its page: a new event waits, delivering,
	// until it is resumed.
	click(t, ctx, "open the destination", chromedp.CSS(`a[href="/ui/destinations/app"]`))
	waitText(t, ctx, "Recent attempts")
	waitText(t, ctx, "order <b>not</b> found")
	click(t, ctx, "pause it", chromedp.CSS(`#hold button`))
	waitText(t, ctx, "paused on every node")
	g.send(t, "evt_held", "succeeded", http.StatusAccepted)
	waitFor(t, "evt_held delivering", func() bool { _, st := g.eventID(t, "evt_held"); return st == inbox.StatusDelivering })
	if dest.tookWith("evt_held") {
		t.Fatal("a paused destination got an event")
	}
	screenshot(t, ctx, shots, "destination-paused")
	click(t, ctx, "resume it", chromedp.CSS(`#hold button`))
	waitText(t, ctx, "resumed")
	waitFor(t, "evt_held delivered", func() bool { return dest.tookWith("evt_held") })

	// Send the source's example event through the intake from the
	// sources page, and see the intake's answer.
	step(t, ctx, "open the sources", chromedp.Navigate(g.url+"/ui/sources"))
	click(t, ctx, "send a test event", chromedp.CSS(`#source-stripe form.send-test button`))
	waitText(t, ctx, "the intake answered 202 Accepted")
	screenshot(t, ctx, shots, "sources-sent")
	events, err := g.store.List(t.Context(), inbox.Filter{Source: "stripe", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events, func(e inbox.Event) bool { return e.Type == "payment_intent.succeeded" }) {
		t.Errorf("no test event stored: %+v", events)
	}
	t.Logf("screenshots in %s", shots)
}
