package console_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/console"
	"github.com/hookgate/hookgate/internal/inbox"
)

// BenchmarkPages serves the console's pages over an inbox of
// HOOKGATE_CONSOLE_BENCH_EVENTS events (100,000 unless set) of 4 sources
// and 50 tenants, received over the last day, every 10th dead and the
// others processed. The overview's first view, which reads the day's
// activity from the store, is timed on its own and logged; the
// benchmark's views then read what a view a moment after another reads.
func BenchmarkPages(b *testing.B) {
	n := 100_000
	if s := os.Getenv("HOOKGATE_CONSOLE_BENCH_EVENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	bd := setup(b, console.Options{})
	ctx, store := b.Context(), bd.store
	const batch = 1000
	var finished []inbox.Result
	for start := 0; start < n; start += batch {
		items := make([]inbox.Item, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			src, tenant, id := fmt.Sprintf("src%d", i%4), fmt.Sprintf("t%d", i%50), fmt.Sprintf("evt_%d", i)
			k := dedupe.Key{Tenant: tenant, Provider: src, EventID: id}
			items = append(items, inbox.Item{Window: time.Hour, Event: inbox.Event{Hash: k.Hash(), Scope: k.Scope(),
				Source: src, Provider: "stripe", Tenant: tenant, EventID: id, Payload: []byte(`{"id":"` + id + `"}`),
				Headers: map[string]string{}}})
		}
		out, err := store.Accept(ctx, items)
		if err != nil {
			b.Fatal(err)
		}
		for i, o := range out {
			r := inbox.Result{ID: o.ID, Status: inbox.StatusProcessed}
			if (start+i)%10 == 0 {
				r = inbox.Result{ID: o.ID, Status: inbox.StatusDead, Error: "refused"}
			}
			finished = append(finished, r)
		}
		bd.clock.Advance(24 * time.Hour / time.Duration((n+batch-1)/batch))
	}
	for {
		leased, err := store.Lease(ctx, "bench", batch, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		if len(leased) == 0 {
			break
		}
	}
	for len(finished) > 0 {
		part := finished[:min(len(finished), batch)]
		finished = finished[len(part):]
		if err := store.Finish(ctx, "bench", part); err != nil {
			b.Fatal(err)
		}
	}
	// The events were finished at once: let their minute close, as the
	// minutes of events finished as they come do.
	bd.clock.Advance(2 * time.Minute)
	bd.signIn()
	began := time.Now()
	bd.get("/ui/")
	b.Logf("overview, first view: %v", time.Since(began))
	bd.clock.Advance(time.Second)
	mid := strconv.Itoa(n / 2)
	for _, page := range []string{
		"/ui/", "/ui/events", "/ui/events?before=" + mid, "/ui/events?source=src1", "/ui/events?status=dead",
		"/ui/dead?source=src2", "/ui/events?q=evt_" + mid, "/ui/events/" + mid, "/ui/sources",
	} {
		b.Run(strings.TrimPrefix(page, "/ui/"), func(b *testing.B) {
			for b.Loop() {
				resp, err := bd.client.Get(bd.srv.URL + page)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%s = %d", page, resp.StatusCode)
				}
			}
		})
	}
}
