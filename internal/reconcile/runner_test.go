package reconcile_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/reconcile"
	"github.com/hookgate/hookgate/internal/reconcile/githubfake"
	"github.com/hookgate/hookgate/internal/reconcile/shippofake"
	"github.com/hookgate/hookgate/internal/reconcile/shopifyfake"
	"github.com/hookgate/hookgate/internal/reconcile/stripefake"
	"github.com/hookgate/hookgate/internal/source"
)

const restrictedKey = "rk_test_reconcile"

type bundle struct {
	api    *stripefake.API
	store  *sqlite.Store
	src    *source.Source
	runner *reconcile.Runner
	events []stripefake.Event
}

// setup holds n events, one a minute up to now, in a fake Stripe, and a
// runner of source pay over a fresh inbox.
func setup(t *testing.T, n int) *bundle {
	t.Helper()
	b := &bundle{api: stripefake.New(restrictedKey)}
	now := time.Now()
	for i := range n {
		b.events = append(b.events, stripefake.Event{ID: fmt.Sprintf("evt_%04d", i), Type: "charge.succeeded",
			Created: now.Add(-time.Duration(n-i) * time.Minute)})
	}
	b.api.Add(b.events...)
	srv := httptest.NewServer(b.api)
	t.Cleanup(srv.Close)
	b.store, b.src = newInbox(t, config.Source{Name: "pay", Provider: "stripe", Secret: config.NewSecret("whsec_dGVzdA==")})
	b.runner = newRunner(t, srv, reconcile.Options{Source: b.src, Store: b.store,
		Config: config.Reconcile{APIKey: config.NewSecret(restrictedKey)}})
	return b
}

// newInbox opens a fresh inbox, and the source sc.
func newInbox(t *testing.T, sc config.Source) (*sqlite.Store, *source.Source) {
	t.Helper()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	src, err := source.New(sc, config.Default().Dedupe)
	if err != nil {
		t.Fatal(err)
	}
	return store, src
}

// newRunner returns the runner o describes, reconciling with the API srv
// serves at 1000 requests a second, with the default overlap and
// lookback.
func newRunner(t *testing.T, srv *httptest.Server, o reconcile.Options) *reconcile.Runner {
	t.Helper()
	o.Client = srv.Client()
	o.Config.Overlap, o.Config.Lookback = config.DefaultReconcileOverlap, config.DefaultReconcileLookback
	o.Config.Rate = config.Rate{N: 1000, Per: time.Second}
	o.Config.APIURL = srv.URL
	r, err := reconcile.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// webhook stores e as its webhook would have been stored.
func (b *bundle) webhook(t *testing.T, e stripefake.Event) {
	t.Helper()
	items, err := intake.ListedItems(b.src, nil, e.Body(1))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := b.store.Accept(t.Context(), items); err != nil || out[0].Status != dedupe.New {
		t.Fatalf("webhook %s: %v %v", e.ID, out, err)
	}
}

// inbox returns the stored events by provider event id, failing on any
// event stored twice.
func (b *bundle) inbox(t *testing.T) map[string]inbox.Event {
	t.Helper()
	evs, err := b.store.List(t.Context(), inbox.Filter{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]inbox.Event{}
	for _, e := range evs {
		if _, twice := out[e.EventID]; twice {
			t.Errorf("%s stored twice", e.EventID)
		}
		out[e.EventID] = e
	}
	return out
}

// A run offers every listed event: those whose webhook came are already
// had, the others are recovered, stored once with via reconcile; the
// checkpoint moves to the run's start, and a rerun recovers nothing.
func TestRunRecoversWhatTheWebhookMissed(t *testing.T) {
	t.Parallel()
	b := setup(t, 250)
	for i, e := range b.events {
		if i%2 == 0 {
			b.webhook(t, e)
		}
	}
	before := time.Now()
	run, err := b.runner.Run(t.Context(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if run.Listed != 250 || run.Had != 125 || run.Recovered != 125 || run.Failed != 0 {
		t.Fatalf("run: %+v", run)
	}
	got := b.inbox(t)
	for i, e := range b.events {
		want := ""
		if i%2 == 1 {
			want = inbox.ViaReconcile
		}
		if ev, ok := got[e.ID]; !ok || ev.Via != want {
			t.Errorf("%s: stored %v, via %q, want via %q", e.ID, ok, ev.Via, want)
		}
	}
	cp, err := b.store.Checkpoint(t.Context(), "pay")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Through.Before(before.Truncate(time.Second)) || !cp.Run.Started.IsZero() || cp.Last.Recovered != 125 {
		t.Fatalf("checkpoint after the run: %+v", cp)
	}
	b.api.Add(stripefake.Event{ID: "evt_late", Type: "charge.succeeded", Created: time.Now()})
	run, err = b.runner.Run(t.Context(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The overlap lists the last 15 minutes again (14 or 15 events, by
	// where the second falls): had, and one new.
	if run.Recovered != 1 || run.Had < 14 || run.Listed != run.Had+1 || !run.Since.Equal(cp.Through.Add(-time.Duration(config.DefaultReconcileOverlap))) {
		t.Fatalf("rerun: %+v, checkpoint %v", run, cp.Through)
	}
	if len(b.inbox(t)) != 251 {
		t.Fatalf("%d events stored, want 251", len(b.inbox(t)))
	}
}

// A run stopped between two pages keeps the pages it stored; the next run
// resumes after the last of them, with the same window, and the
// checkpoint moves only once the last page is stored.
func TestRunResumesFromTheLastPageStored(t *testing.T) {
	t.Parallel()
	b := setup(t, 250)
	arrived, release := b.api.Hold(2)
	defer release()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := b.runner.Run(ctx, reconcile.RunOptions{})
		done <- err
	}()
	<-arrived
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the stopped run reported no error")
	}
	cp, err := b.store.Checkpoint(t.Context(), "pay")
	if err != nil {
		t.Fatal(err)
	}
	first := b.api.Requests()[0]
	// Newest first: the first page is the 100 newest events.
	if !cp.Through.IsZero() || cp.Run.After != b.events[150].ID || cp.Run.Recovered != 100 || len(b.inbox(t)) != 100 {
		t.Fatalf("after the stop: %+v, %d stored", cp, len(b.inbox(t)))
	}
	run, err := b.runner.Run(t.Context(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := b.api.Requests()
	resumed := reqs[2]
	if resumed.Get("starting_after") != b.events[150].ID || resumed.Get("created[gte]") != first.Get("created[gte]") {
		t.Fatalf("resumed with %v, first run %v", resumed, first)
	}
	if run.Listed != 250 || run.Recovered != 250 || len(b.inbox(t)) != 250 {
		t.Fatalf("resumed run: %+v, %d stored", run, len(b.inbox(t)))
	}
	if cp, _ = b.store.Checkpoint(t.Context(), "pay"); !cp.Through.Equal(run.Started) || !cp.Run.Started.IsZero() {
		t.Fatalf("checkpoint after the resumed run: %+v", cp)
	}
}

// A dry run reports what a run would recover and stores nothing.
func TestDryRunStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, 30)
	b.webhook(t, b.events[0])
	run, err := b.runner.Run(t.Context(), reconcile.RunOptions{DryRun: true, Since: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if run.Listed != 30 || run.Had != 1 || run.Recovered != 29 || len(b.inbox(t)) != 1 {
		t.Fatalf("dry run: %+v, %d stored", run, len(b.inbox(t)))
	}
	if cp, _ := b.store.Checkpoint(t.Context(), "pay"); !cp.Through.IsZero() || cp.Last.Listed != 0 {
		t.Fatalf("checkpoint after a dry run: %+v", cp)
	}
}

// An on-demand run moves the checkpoint only when it listed at least as
// far back as a scheduled run would have: a shorter one would leave a
// gap behind the new checkpoint.
func TestOnDemandRunMovesTheCheckpointOnlyWhenItCovers(t *testing.T) {
	t.Parallel()
	b := setup(t, 30)
	if _, err := b.runner.Run(t.Context(), reconcile.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	first, _ := b.store.Checkpoint(t.Context(), "pay")
	short, err := b.runner.Run(t.Context(), reconcile.RunOptions{Since: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if cp, _ := b.store.Checkpoint(t.Context(), "pay"); !cp.Through.Equal(first.Through) || !cp.Last.Started.Equal(short.Started) {
		t.Fatalf("after a run of the last minute: checkpoint %v, want %v kept", cp.Through, first.Through)
	}
	long, err := b.runner.Run(t.Context(), reconcile.RunOptions{Since: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if cp, _ := b.store.Checkpoint(t.Context(), "pay"); !cp.Through.Equal(long.Started) {
		t.Fatalf("after a run of the last hour: checkpoint %v, want its start %v", cp.Through, long.Started)
	}
}

// A GitHub run asks GitHub to redeliver each listed GUID whose key the
// inbox lacks, once however often GitHub tried it, and stores nothing
// itself: the redeliveries come as webhooks. A dry run asks nothing, and
// once the redeliveries came, a rerun asks nothing either.
func TestRunAsksGitHubToRedeliver(t *testing.T) {
	t.Parallel()
	store, src := newInbox(t, config.Source{Name: "gh", Provider: "github", Secret: config.NewSecret("hook-secret")})
	// The hook's URL stores what it is sent as intake keys it.
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		items, err := intake.ListedItems(src, r.Header, body)
		if err == nil {
			_, err = store.Accept(r.Context(), items)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	t.Cleanup(hook.Close)
	api := githubfake.New("ghp_token", "repos/acme/shop/hooks/1", "hook-secret")
	api.Target(hook.URL)
	apiSrv := httptest.NewServer(api)
	t.Cleanup(apiSrv.Close)
	t.Cleanup(api.Wait)
	now := time.Now()
	for i := range 30 {
		d := githubfake.Delivery{GUID: fmt.Sprintf("guid-%02d", i), Event: "push", At: now.Add(-time.Duration(30-i) * time.Minute), Body: []byte(`{}`)}
		if i%3 == 0 {
			if code, err := api.Deliver(d); err != nil || code != http.StatusAccepted && code != http.StatusOK {
				t.Fatalf("deliver %s: %d %v", d.GUID, code, err)
			}
			continue
		}
		api.Add(d)
		if i == 1 {
			d.At = d.At.Add(time.Second)
			api.Add(d)
		}
	}
	runner := newRunner(t, apiSrv, reconcile.Options{Source: src, Store: store,
		Config: config.Reconcile{Token: config.NewSecret("ghp_token"), Hook: "repos/acme/shop/hooks/1"}})
	dry, err := runner.Run(t.Context(), reconcile.RunOptions{DryRun: true, Since: time.Hour})
	if err != nil || dry.Listed != 30 || dry.Had != 10 || dry.Recovered != 20 || len(api.Redelivered()) != 0 {
		t.Fatalf("dry run: %+v, %v; redelivered %v", dry, err, api.Redelivered())
	}
	run, err := runner.Run(t.Context(), reconcile.RunOptions{})
	if err != nil || run.Listed != 30 || run.Had != 10 || run.Recovered != 20 || run.Failed != 0 {
		t.Fatalf("run: %+v, %v", run, err)
	}
	api.Wait()
	asked := api.Redelivered()
	slices.Sort(asked)
	if len(asked) != 20 || len(slices.Compact(asked)) != 20 {
		t.Fatalf("redelivered %v, want the 20 GUIDs not had, once each", asked)
	}
	evs, err := store.List(t.Context(), inbox.Filter{Limit: 100})
	if err != nil || len(evs) != 30 {
		t.Fatalf("%d events stored, want 30 (%v)", len(evs), err)
	}
	for _, e := range evs {
		if e.Via != "" {
			t.Errorf("%s stored via %q: a redelivery comes through intake", e.EventID, e.Via)
		}
	}
	rerun, err := runner.Run(t.Context(), reconcile.RunOptions{})
	if err != nil || rerun.Recovered != 0 || rerun.Had != rerun.Listed || len(api.Redelivered()) != 20 {
		t.Fatalf("rerun: %+v, %v; %d redeliveries", rerun, err, len(api.Redelivered()))
	}
}

// A Shopify run accepts each listed object as a state under a key made
// from the object and its updated_at: listed again, before any is
// applied, each is a duplicate; a newer state of one object is new.
func TestRunKeepsShopifyStatesOnce(t *testing.T) {
	t.Parallel()
	store, src := newInbox(t, config.Source{Name: "shop", Provider: "shopify", Secret: config.NewSecret("app-secret")})
	api := shopifyfake.New("shpat_token")
	now := time.Now().Truncate(time.Second)
	for i := range 40 {
		api.Add("products", shopifyfake.Object{ID: int64(i + 1), UpdatedAt: now.Add(-time.Duration(i) * time.Minute)})
	}
	apiSrv := httptest.NewServer(api)
	t.Cleanup(apiSrv.Close)
	runner := newRunner(t, apiSrv, reconcile.Options{Source: src, Store: store,
		Config: config.Reconcile{Token: config.NewSecret("shpat_token"), Shop: "acme.myshopify.com", Resources: []string{"products"}}})
	dry, err := runner.Run(t.Context(), reconcile.RunOptions{DryRun: true})
	if err != nil || dry.Listed != 40 || dry.Recovered != 40 {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	for i, want := range []int64{40, 0} {
		run, err := runner.Run(t.Context(), reconcile.RunOptions{Since: 2 * time.Hour})
		if err != nil || run.Listed != 40 || run.Recovered != want || run.Had != 40-want {
			t.Fatalf("run %d: %+v, %v; want %d recovered", i+1, run, err, want)
		}
	}
	api.Add("products", shopifyfake.Object{ID: 3, UpdatedAt: now.Add(time.Second)})
	run, err := runner.Run(t.Context(), reconcile.RunOptions{Since: 2 * time.Hour})
	if err != nil || run.Listed != 41 || run.Recovered != 1 {
		t.Fatalf("after an update: %+v, %v", run, err)
	}
}

// A Shippo run asks about each tracking number of the source not in a
// final status, a page of 100 at a time: a status the webhook brought is
// already had, a newer one is recovered once, and a final number is not
// asked about.
func TestRunAsksShippoAboutOpenNumbers(t *testing.T) {
	t.Parallel()
	store, src := newInbox(t, config.Source{Name: "ship", Provider: "shippo", Secret: config.NewSecret("shippo-secret")})
	api := shippofake.New("shippo_test_token")
	now := time.Now().Truncate(time.Second)
	var ids []int64
	wantAsked := map[string]bool{}
	moved, refused := 0, 0
	for i := range 230 {
		tr := shippofake.Track{Carrier: "usps", Number: fmt.Sprintf("92055901%06d", i), Status: "TRANSIT", StatusDate: now.Add(-time.Hour)}
		switch {
		case i%10 == 0:
			tr.Status = "DELIVERED"
		case i%25 == 1:
			// A carrier Shippo does not track: refused, this number alone.
			tr.Carrier = "pigeon"
			refused++
		}
		items, err := intake.ListedItems(src, nil, tr.Webhook())
		if err != nil {
			t.Fatal(err)
		}
		out, err := store.Accept(t.Context(), items)
		if err != nil || out[0].Status != dedupe.New {
			t.Fatalf("webhook of %s: %v %v", tr.Number, out, err)
		}
		ids = append(ids, out[0].ID)
		if tr.Status != "DELIVERED" {
			wantAsked["/tracks/"+tr.Carrier+"/"+tr.Number] = true
			if i%3 == 0 && tr.Carrier == "usps" {
				tr.Status, tr.StatusDate = "DELIVERED", now
				moved++
			}
		}
		api.Set(tr)
	}
	var evs []inbox.Event
	for _, id := range ids {
		e, err := store.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	if _, err := store.Apply(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	api.RateLimit(7)
	apiSrv := httptest.NewServer(api)
	t.Cleanup(apiSrv.Close)
	var logged bytes.Buffer
	runner := newRunner(t, apiSrv, reconcile.Options{Source: src, Store: store, Logger: slog.New(slog.NewTextHandler(&logged, nil)),
		Config: config.Reconcile{Token: config.NewSecret("shippo_test_token")}})
	open := int64(len(wantAsked))
	for i, want := range []int64{int64(moved), 0} {
		run, err := runner.Run(t.Context(), reconcile.RunOptions{})
		if err != nil || run.Listed != open || run.Recovered != want || run.Failed != int64(refused) || run.Had != open-want-int64(refused) {
			t.Fatalf("run %d: %+v, %v; want %d listed, %d recovered, %d failed", i+1, run, err, open, want, refused)
		}
	}
	// The log names the first failure by Shippo's refusal.
	if want := "GET /tracks/pigeon/92055901000001: refused by the provider's API: 404 Not Found"; !strings.Contains(logged.String(), want) {
		t.Errorf("log:\n%s\nwant the failure: %s", logged.String(), want)
	}
	asked := map[string]int{}
	for _, path := range api.Requests() {
		asked[path]++
	}
	for path, n := range asked {
		if !wantAsked[path] {
			t.Errorf("asked about %s (%d times), whose status is final or not the source's", path, n)
		}
	}
	if len(asked) != len(wantAsked) {
		t.Errorf("asked about %d numbers, want the %d open ones", len(asked), len(wantAsked))
	}
	all, err := store.List(t.Context(), inbox.Filter{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	recovered := 0
	for _, e := range all {
		if e.Via == inbox.ViaReconcile {
			recovered++
			if e.EntityState != "DELIVERED" {
				t.Errorf("recovered %s in state %q, want DELIVERED", e.EventID, e.EntityState)
			}
		}
	}
	if recovered != moved {
		t.Errorf("%d events recovered, want %d", recovered, moved)
	}
}
