package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/eventview"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/source"
)

const tieSecret = "whsec_tie_test_secret"

// stripeCreated is the `created` second both events of a pair carry:
// Stripe versions an entity by it, in whole seconds.
const stripeCreated = 1764000000

// tieSink records each delivery of each destination (by path):
// the provider event id, and the transition and tie headers.
type tieSink struct {
	*httptest.Server
	mu  sync.Mutex
	got map[string][]string
}

func newTieSink(t *testing.T) *tieSink {
	t.Helper()
	s := &tieSink{got: map[string][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got[r.URL.Path] = append(s.got[r.URL.Path], strings.TrimSpace(fmt.Sprintf("%s %s %s",
			r.Header.Get("X-Hookgate-Event-Id"), r.Header.Get("X-Hookgate-Transition"), r.Header.Get("X-Hookgate-Tie"))))
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	return s
}

// deliveries returns what the destination at path got, sorted.
func (s *tieSink) deliveries(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(slices.Values(s.got[path]))
}

// sendStripe posts a signed Stripe event of type typ for payment intent
// pi in status, created at stripeCreated, and returns the status code.
func sendStripe(t *testing.T, signer interface {
	Sign(*http.Request, []byte) error
}, addr, id, typ, pi, status string) int {
	t.Helper()
	body := fmt.Appendf(nil, `{"id":%q,"object":"event","type":%q,"created":%d,"data":{"object":{"id":%q,"object":"payment_intent","status":%q}}}`,
		id, typ, stripeCreated, pi, status)
	return postSigned(t, signer, addr+"/in/stripe", body, nil)
}

// postSigned posts body to url with header, signed by signer, and returns
// the status code.
func postSigned(t *testing.T, signer interface {
	Sign(*http.Request, []byte) error
}, url string, body []byte, header http.Header) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for name, values := range header {
		req.Header[name] = values
	}
	if err := signer.Sign(req, body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// G5: Stripe versions a payment intent by the event's `created`, in whole
// seconds, and sends several events per object per second. Through a
// real `hookgate serve`, two events of one payment intent in one second
// are both applied and delivered: to the on: event destination, and to
// the on: transition one as the transitions they make. The later arrival
// is recorded as a tie (events list --apply tie, events show, the
// X-Hookgate-Tie header) and its state stands: created then succeeded
// ends at succeeded; succeeded then created ends at
// requires_payment_method, the documented outcome (docs/providers.md).
// One worker applies the events in arrival order, so which transitions
// fire is fixed too (ties applied out of order are the inbox suite's
// ApplyTies case).
func TestStripeTieInOneSecond(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a hookgate process")
	}
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/secret", []byte(tieSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sink := newTieSink(t)
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
database: sqlite:%[1]s/hookgate.db
workers: 1
sources:
  - name: stripe
    provider: stripe
    secret: file:%[1]s/secret
    destinations:
      - name: app
        url: %[2]s/app
      - name: ledger
        url: %[2]s/ledger
        on: transition
`, dir, sink.URL)
	path := dir + "/hookgate.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := source.NewSigner(config.Source{Name: "stripe", Provider: "stripe", Secret: config.NewSecret(tieSecret)})
	if err != nil {
		t.Fatal(err)
	}
	p := startServe(t, "--config", path)

	for _, e := range []struct{ id, typ, pi, status string }{
		{"evt_fwd_created", "payment_intent.created", "pi_fwd", "requires_payment_method"},
		{"evt_fwd_succeeded", "payment_intent.succeeded", "pi_fwd", "succeeded"},
		{"evt_fwd_updated", "payment_intent.updated", "pi_fwd", "succeeded"},
		{"evt_rev_succeeded", "payment_intent.succeeded", "pi_rev", "succeeded"},
		{"evt_rev_created", "payment_intent.created", "pi_rev", "requires_payment_method"},
	} {
		if st := sendStripe(t, signer, p.addr, e.id, e.typ, e.pi, e.status); st != http.StatusAccepted {
			t.Fatalf("%s: %d, want 202", e.id, st)
		}
	}

	store := openDB(t, "sqlite:"+dir+"/hookgate.db")
	eventually(t, "the five events processed", func() bool {
		evs, err := store.List(t.Context(), inbox.Filter{Status: inbox.StatusProcessed})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs) == 5
	})
	views := map[string]eventview.Event{}
	sc := bufio.NewScanner(strings.NewReader(runCLI(t, "events", "list", "--config", path, "--json")))
	for sc.Scan() {
		var v eventview.Event
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		views[v.EventID] = v
	}

	// Every event but the tie that left the state is a transition (the
	// first of an entity is one from ""): app gets all five, each once,
	// ledger all but that one.
	transitions := []string{
		"evt_fwd_created ->requires_payment_method", "evt_fwd_succeeded requires_payment_method->succeeded true",
		"evt_rev_created succeeded->requires_payment_method true", "evt_rev_succeeded ->succeeded",
	}
	all := slices.Sorted(slices.Values(append([]string{"evt_fwd_updated  true"}, transitions...)))
	if got := sink.deliveries("/app"); !slices.Equal(got, all) {
		t.Errorf("app (on: event) got %q, want %q", got, all)
	}
	if got := sink.deliveries("/ledger"); !slices.Equal(got, transitions) {
		t.Errorf("ledger (on: transition) got %q, want %q", got, transitions)
	}

	for _, c := range []struct {
		id         string
		applied    inbox.ApplyOutcome
		transition string
		tie        bool
	}{
		{"evt_fwd_created", inbox.ApplyApplied, "->requires_payment_method", false},
		{"evt_fwd_succeeded", inbox.ApplyApplied, "requires_payment_method->succeeded", true},
		{"evt_fwd_updated", inbox.ApplyUnchanged, "", true},
		{"evt_rev_succeeded", inbox.ApplyApplied, "->succeeded", false},
		{"evt_rev_created", inbox.ApplyApplied, "succeeded->requires_payment_method", true},
	} {
		if v := views[c.id]; v.Applied != c.applied || v.Transition != c.transition || v.Tie != c.tie {
			t.Errorf("%s: applied %s, transition %q, tie %v; want %s, %q, %v", c.id, v.Applied, v.Transition, v.Tie,
				c.applied, c.transition, c.tie)
		}
	}
	var ties []string
	sc = bufio.NewScanner(strings.NewReader(runCLI(t, "events", "list", "--config", path, "--apply", "tie", "--json")))
	for sc.Scan() {
		var v eventview.Event
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		ties = append(ties, v.EventID)
	}
	if fmt.Sprint(ties) != "[evt_rev_created evt_fwd_updated evt_fwd_succeeded]" {
		t.Errorf("events list --apply tie: %v, want the three later arrivals", ties)
	}

	for id, want := range map[string]string{"evt_fwd_updated": "succeeded", "evt_rev_created": "requires_payment_method"} {
		var d eventview.Detail
		if err := json.Unmarshal([]byte(runCLI(t, "events", "show", "--config", path, "--json", id)), &d); err != nil {
			t.Fatal(err)
		}
		if d.Entity == nil || d.Entity.State != want || d.Entity.Version != fmt.Sprint(stripeCreated) || d.Entity.WrittenBy != d.ID || !d.Tie {
			t.Errorf("events show --json %s: tie %v, entity %+v; want a tie, the entity at %s written by it", id, d.Tie, d.Entity, want)
		}
		if text := runCLI(t, "events", "show", "--config", path, id); !strings.Contains(text, " (a tie: the entity had this version already") {
			t.Errorf("events show %s does not say it is a tie:\n%s", id, text)
		}
	}
}

// runCLI runs `hookgate args...` in a child process beside the running
// serve and returns its output.
func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := command(t, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hookgate %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}
