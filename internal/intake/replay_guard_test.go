package intake_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/config"
	inboxsqlite "github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/source"
	"github.com/hookgate/hookgate/internal/testproc"
	"github.com/hookgate/hookgate/verify"
)

// captured is one signed delivery as an attacker would record it: the
// body and every header, to be sent again with its unsigned parts changed.
type captured struct {
	Body   []byte
	Header http.Header
}

// capture signs body for src at path with header.
func (b *bundle) capture(t *testing.T, src, path string, body []byte, header map[string]string) captured {
	t.Helper()
	req := b.request(t, path, b.sources[src].Signer(), body, header)
	return captured{Body: body, Header: req.Header.Clone()}
}

// replay sends c to path with the headers in change set (or deleted when
// empty).
func (b *bundle) replay(t *testing.T, c captured, path string, change map[string]string) (int, intake.Response) {
	t.Helper()
	req := b.request(t, path, nil, c.Body, nil)
	req.Header = c.Header.Clone()
	for k, v := range change {
		req.Header.Set(k, v)
	}
	return do(t, req)
}

// Issue 9, finding 1: a captured delivery replayed with its unsigned parts
// changed (the path tenant, GitHub's delivery id and event, Shopify's shop
// domain) is a duplicate of the accepted one and stores nothing.
func TestReplayWithUnsignedPartsChanged(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	for _, tc := range []struct {
		name, src, path string
		body            []byte
		header          map[string]string
		paths           []string
		changes         []map[string]string
	}{
		{name: "path tenant", src: "stdt", path: "/in/stdt/tenantA",
			body: []byte(`{"type":"invoice.paid"}`), header: map[string]string{"webhook-id": "msg_guard"},
			paths: []string{"/in/stdt/tenantB", "/in/stdt/tenantC"}},
		{name: "github delivery and event", src: "gh", path: "/in/gh",
			body:   []byte(`{"action":"opened","number":7}`),
			header: map[string]string{"X-GitHub-Delivery": "d-1", "X-GitHub-Event": "issues"},
			changes: []map[string]string{{"X-GitHub-Delivery": "d-2"}, {"X-GitHub-Event": "push"},
				{"X-GitHub-Delivery": "d-3", "X-GitHub-Event": "release"}}},
		{name: "shopify shop domain", src: "shop", path: "/in/shop",
			body: []byte(`{"id":450789469}`), header: map[string]string{
				"X-Shopify-Webhook-Id": "w-1", "X-Shopify-Topic": "orders/create",
				"X-Shopify-Shop-Domain": "acme.myshopify.com", "X-Shopify-Triggered-At": "2026-12-01T10:00:00Z"},
			changes: []map[string]string{{"X-Shopify-Shop-Domain": "victim.myshopify.com"},
				{"X-Shopify-Webhook-Id": "w-2", "X-Shopify-Topic": "orders/paid"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.count(t, "events")
			c := b.capture(t, tc.src, tc.path, tc.body, tc.header)
			if st, resp := b.replay(t, c, tc.path, nil); st != http.StatusAccepted {
				t.Fatalf("the delivery: %d %+v, want 202", st, resp)
			}
			for _, p := range tc.paths {
				if st, resp := b.replay(t, c, p, nil); st != http.StatusOK || resp.Events[0].Outcome != "duplicate" {
					t.Errorf("replayed to %s: %d %+v, want 200 duplicate", p, st, resp)
				}
			}
			for _, ch := range tc.changes {
				if st, resp := b.replay(t, c, tc.path, ch); st != http.StatusOK || resp.Events[0].Outcome != "duplicate" {
					t.Errorf("replayed with %v: %d %+v, want 200 duplicate", ch, st, resp)
				}
			}
			if n := b.count(t, "events") - before; n != 1 {
				t.Errorf("%d events stored, want 1", n)
			}
		})
	}
	if n := b.count(t, "replay_digests"); n != 3 {
		t.Errorf("%d digests kept, want one per accepted request (3)", n)
	}
}

// The guard swallows no real event: a new delivery with the same body is
// new, a provider's retry (signed again) is a duplicate by its key whose
// replays are duplicates too, and a request the source refuses keeps no
// digest, so the real one still gets in.
func TestReplayGuardKeepsRealEvents(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	body := []byte(`{"type":"invoice.paid"}`)
	if st, resp := b.post(t, "stdt", "/in/stdt/acme", body, map[string]string{"webhook-id": "msg_1"}); st != http.StatusAccepted {
		t.Fatalf("first: %d %+v", st, resp)
	}
	if st, resp := b.post(t, "stdt", "/in/stdt/acme", body, map[string]string{"webhook-id": "msg_2"}); st != http.StatusAccepted {
		t.Errorf("another message with the same body: %d %+v, want 202", st, resp)
	}
	// Signed a minute later than the first, as a provider's retry is.
	later, err := source.NewSigner(testSources()[1], verify.WithClock(func() time.Time { return time.Now().Add(time.Minute) }))
	if err != nil {
		t.Fatal(err)
	}
	req := b.request(t, "/in/stdt/acme", later, body, map[string]string{"webhook-id": "msg_1"})
	retry := captured{Body: body, Header: req.Header}
	if st, resp := b.replay(t, retry, "/in/stdt/acme", nil); st != http.StatusOK {
		t.Errorf("the provider's retry: %d %+v, want 200", st, resp)
	}
	// The retry is a duplicate by its key, but its digest is new and must
	// be kept all the same: replayed elsewhere it is no new event.
	if st, resp := b.replay(t, retry, "/in/stdt/victim", nil); st != http.StatusOK {
		t.Errorf("the retry replayed to another tenant: %d %+v, want 200", st, resp)
	}
	c := b.capture(t, "stdt", "/in/stdt/x", body, map[string]string{"webhook-id": "msg_3"})
	if st, _ := b.replay(t, c, "/in/stdt/bad%00tenant", nil); st != http.StatusBadRequest {
		t.Fatalf("bad tenant: %d, want 400", st)
	}
	if st, resp := b.replay(t, c, "/in/stdt/acme", nil); st != http.StatusAccepted {
		t.Errorf("the same signed request to a good tenant after a refused one: %d %+v, want 202", st, resp)
	}
	if n := b.count(t, "events"); n != 3 {
		t.Errorf("%d events stored, want 3", n)
	}
}

// replay_guard: off keeps the behaviour without the guard: the tenant in
// the path makes a new event.
func TestReplayGuardOff(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	c := b.capture(t, "stdtoff", "/in/stdtoff/a", []byte(`{"type":"x"}`), map[string]string{"webhook-id": "msg_off"})
	for _, p := range []string{"/in/stdtoff/a", "/in/stdtoff/b"} {
		if st, resp := b.replay(t, c, p, nil); st != http.StatusAccepted {
			t.Errorf("%s: %d %+v, want 202 (guard off)", p, st, resp)
		}
	}
	if n := b.count(t, "replay_digests"); n != 0 {
		t.Errorf("%d digests kept with the guard off, want 0", n)
	}
}

// Copies of one signed request to different path tenants, sent at once,
// give exactly one 202 and one stored event: the committer must not write
// two of them in one batch as different events.
func TestReplaysConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	c := b.capture(t, "stdt", "/in/stdt/t", []byte(`{"type":"race"}`), map[string]string{"webhook-id": "msg_race"})
	const n = 64
	statuses := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		req := b.request(t, fmt.Sprintf("/in/stdt/tenant%d", i), nil, c.Body, nil)
		req.Header = c.Header.Clone()
		wg.Go(func() {
			<-start
			statuses[i], _ = do(t, req)
		})
	}
	close(start)
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	if counts[http.StatusAccepted] != 1 || counts[http.StatusOK] != n-1 {
		t.Errorf("statuses %v, want one 202 and %d 200", counts, n-1)
	}
	if rows := b.count(t, "events"); rows != 1 {
		t.Errorf("%d events stored, want 1", rows)
	}
}

// Two guarded requests with one digest never share a write: one waiting
// behind a write in flight is held until that write ends, then asks the
// store, which knows the digest by then.
func TestGuardedCopiesNotInOneBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newGatedStore(t)
		c := newCommitter(s, intake.CommitterOptions{RecentKeys: -1})
		defer c.Close()
		blocker := submitAsync(c, s, item("evt_blocker"))
		<-s.calls
		d := dedupe.Key{Provider: "digest", EventID: "one request"}.Hash()
		const copies = 8
		answers := make([]<-chan answer, copies)
		for i := range answers {
			it := item(fmt.Sprintf("evt_tenant%d", i))
			it.Digest = d
			answers[i] = submitAsync(c, s, it)
		}
		synctest.Wait()
		s.gate <- nil
		<-blocker
		news := 0
		for range copies {
			got := <-s.calls
			withDigest := 0
			for _, it := range got {
				if it.Digest == d {
					withDigest++
				}
			}
			if withDigest > 1 {
				t.Fatalf("one write holds %d requests with one digest", withDigest)
			}
			s.gate <- nil
		}
		for i, ch := range answers {
			a := <-ch
			if a.err != nil {
				t.Fatalf("copy %d: %v", i, a.err)
			}
			if a.out.Status == dedupe.New {
				news++
			}
		}
		if news != 1 {
			t.Errorf("%d copies new, want 1", news)
		}
	})
}

// Copies of one signed request to different path tenants, sent at once to
// two processes serving one database file, give exactly one 202.
func TestReplaysAcrossProcesses(t *testing.T) {
	t.Parallel()
	const procs, each = 2, 16
	if child, ok := testproc.AsChild(t); ok {
		var c captured
		if err := json.Unmarshal([]byte(child.Arg), &c); err != nil {
			t.Fatal(err)
		}
		store, err := inboxsqlite.Open(c.Header.Get("X-Test-Db"), inboxsqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		var srcs []*source.Source
		for _, sc := range testSources() {
			src, err := source.New(sc, config.Default().Dedupe)
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, src)
		}
		committer := newCommitter(store, intake.CommitterOptions{})
		srv := httptest.NewServer(intake.NewHandler(intake.Options{Sources: srcs, Committer: committer}))
		defer committer.Close()
		defer srv.Close()
		reqs := make([]*http.Request, each)
		for i := range reqs {
			req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/in/stdt/p%dt%d", srv.URL, child.Index, i), bytes.NewReader(c.Body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = c.Header.Clone()
			reqs[i] = req
		}
		child.Ready(t)
		statuses := make([]int, each)
		var wg sync.WaitGroup
		for i, req := range reqs {
			wg.Go(func() { statuses[i], _ = do(t, req) })
		}
		wg.Wait()
		child.Report(t, statuses)
		return
	}
	b := setup(t, 0)
	c := b.capture(t, "stdt", "/in/stdt/t", []byte(`{"type":"race"}`), map[string]string{"webhook-id": "msg_procs"})
	c.Header.Set("X-Test-Db", b.path)
	arg, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[int]int{}
	for _, report := range testproc.Run(t, procs, string(arg)) {
		var statuses []int
		if err := json.Unmarshal(report, &statuses); err != nil {
			t.Fatal(err)
		}
		for _, s := range statuses {
			counts[s]++
		}
	}
	if counts[http.StatusAccepted] != 1 || counts[http.StatusOK] != procs*each-1 {
		t.Errorf("statuses %v, want one 202 and %d 200", counts, procs*each-1)
	}
	if rows := b.count(t, "events"); rows != 1 {
		t.Errorf("%d events stored, want 1", rows)
	}
}
