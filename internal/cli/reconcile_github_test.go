package cli_test

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/cli"
	"github.com/hookgate/hookgate/internal/reconcile/githubfake"
)

// Deliveries GitHub made to a hookgate serve and deliveries that never
// reached it (a GUID GitHub tried twice among them), mixed: a dry run
// asks for nothing; a run asks GitHub to redeliver each missing GUID
// once, GitHub re-sends them signed with their GUIDs through intake, and
// every GUID is then stored once and delivered once; a rerun asks for
// nothing.
func TestReconcileRedeliversMissedGitHubDeliveries(t *testing.T) {
	t.Parallel()
	const (
		secret = "github-hook-secret"
		token  = "github_pat_reconcile_e2e"
		hook   = "repos/acme/shop/hooks/498912341"
	)
	api := githubfake.New(token, hook, secret)
	g := startRCGateway(t, api, rcSource{name: "gh", provider: "github", secret: secret, token: token,
		reconcile: "      hook: " + hook + "\n"}, nil)
	t.Cleanup(api.Wait)
	api.Target(g.intake)

	now := time.Now()
	var guids []string
	for i := range 40 {
		guid := fmt.Sprintf("6d1e5c30-9a4f-11ef-8f1a-%012d", i)
		guids = append(guids, guid)
		d := githubfake.Delivery{GUID: guid, Event: "issues", Action: "opened", At: now.Add(-time.Duration(40-i) * time.Minute),
			Body: fmt.Appendf(nil, `{"id":%q,"action":"opened","issue":{"number":%d}}`, guid, i)}
		if i%2 == 0 {
			if code, err := api.Deliver(d); err != nil || code != http.StatusAccepted {
				t.Fatalf("delivery %s: %d %v, want 202", guid, code, err)
			}
			continue
		}
		api.Add(d)
		if i == 1 {
			d.At = d.At.Add(30 * time.Second)
			api.Add(d)
		}
	}

	dry := g.reconcile(t, "--source", "gh", "--dry-run").Sources[0]
	if r := dry.Run; r == nil || r.Listed != 40 || r.AlreadyHad != 20 || r.Recovered != 20 || len(api.Redelivered()) != 0 {
		t.Fatalf("dry run: %+v, redelivered %v", dry.Run, api.Redelivered())
	}
	rep := g.reconcile(t, "--source", "gh").Sources[0]
	if r := rep.Run; r == nil || r.Listed != 40 || r.AlreadyHad != 20 || r.Recovered != 20 || r.Failed != 0 || r.Error != "" {
		t.Fatalf("run: %+v", rep.Run)
	}
	api.Wait()
	asked := api.Redelivered()
	slices.Sort(asked)
	if len(asked) != 20 || len(slices.Compact(asked)) != 20 {
		t.Fatalf("redelivered %d GUIDs (%d different), want the 20 missing once each", len(asked), len(slices.Compact(asked)))
	}
	g.waitDelivered(t, "every GUID stored and delivered", len(guids))
	stored, delivered := g.stored(t), g.sink.counts()
	for _, guid := range guids {
		if _, ok := stored[guid]; !ok || delivered[guid] != 1 {
			t.Errorf("%s: stored %v, delivered %d times, want stored and delivered once", guid, ok, delivered[guid])
		}
	}
	if len(stored) != len(guids) {
		t.Errorf("%d events stored, want %d", len(stored), len(guids))
	}

	var out, errb bytes.Buffer
	if err := cli.Run(t.Context(), []string{"reconcile", "--config", g.config, "--source", "gh"}, nil, &out, &errb); err != nil {
		t.Fatalf("rerun: %v\n%s", err, errb.String())
	}
	for _, want := range []string{`source gh \(github\)`, `recovered +0 +no webhook came: redelivery asked of GitHub`} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("rerun's report lacks %q:\n%s", want, out.String())
		}
	}
	if len(api.Redelivered()) != 20 {
		t.Errorf("the rerun asked for %d more redeliveries", len(api.Redelivered())-20)
	}
}
