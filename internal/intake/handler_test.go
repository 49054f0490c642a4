package intake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	dsqlite "github.com/hookgate/hookgate/dedupe/sqlite"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
	inboxsqlite "github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/metrics"
	"github.com/hookgate/hookgate/internal/source"
	"github.com/hookgate/hookgate/verify"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	stripeSecret   = "whsec_stripe_test_secret"
	githubSecret   = "github-secret"
	shopifySecret  = "shopify-secret"
	hubspotSecret  = "hubspot-client-secret"
	sfOrg          = "00D5e000000AbCdEAK"
)

func testSources() []config.Source {
	return []config.Source{
		{Name: "std", Provider: "standard", Secret: config.NewSecret(standardSecret)},
		{Name: "stdt", Provider: "standard", Secret: config.NewSecret(standardSecret), Tenant: "path"},
		{Name: "stripe", Provider: "stripe", Secret: config.NewSecret(stripeSecret)},
		{Name: "gh", Provider: "github", Secret: config.NewSecret(githubSecret)},
		{Name: "shop", Provider: "shopify", Secret: config.NewSecret(shopifySecret)},
		{Name: "crm", Provider: "hubspot", Secret: config.NewSecret(hubspotSecret)},
		{Name: "sf", Provider: "salesforce", OrganizationID: sfOrg},
		{Name: "stdtoff", Provider: "standard", Secret: config.NewSecret(standardSecret), Tenant: "path",
			ReplayGuard: config.ReplayGuardOff},
	}
}

type bundle struct {
	url     string
	path    string
	metrics *metrics.Metrics
	store   *inboxsqlite.Store
	sources map[string]*source.Source
	now     func() time.Time
}

// setup serves the intake handler over a real socket on a fresh database.
func setup(t testing.TB, maxBody int64) *bundle {
	t.Helper()
	path := t.TempDir() + "/hookgate.db"
	store, err := inboxsqlite.Open(path, inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{path: path, store: store, sources: map[string]*source.Source{}, now: time.Now, metrics: metrics.New()}
	var srcs []*source.Source
	for _, sc := range testSources() {
		s, err := source.New(sc, config.Default().Dedupe)
		if err != nil {
			t.Fatalf("source %s: %v", sc.Name, err)
		}
		b.sources[sc.Name] = s
		srcs = append(srcs, s)
	}
	c := newCommitter(store, intake.CommitterOptions{})
	srv := httptest.NewServer(intake.NewHandler(intake.Options{Sources: srcs, Committer: c, MaxBody: maxBody, Metrics: b.metrics}))
	t.Cleanup(func() {
		srv.Close()
		c.Close()
		store.Close()
	})
	b.url = srv.URL
	return b
}

// signedRequest builds a request for src signed by signer (the source's own
// signer unless one is given).
func (b *bundle) request(t testing.TB, path string, signer verify.Signer, body []byte, header map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if signer != nil {
		if err := signer.Sign(req, body); err != nil {
			t.Fatal(err)
		}
	}
	return req
}

func (b *bundle) post(t *testing.T, src, path string, body []byte, header map[string]string) (int, intake.Response) {
	t.Helper()
	return do(t, b.request(t, path, b.sources[src].Signer(), body, header))
}

func do(t testing.TB, req *http.Request) (int, intake.Response) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r intake.Response
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("response %d %q: %v", resp.StatusCode, raw, err)
		}
	} else {
		r.Error = string(raw)
	}
	return resp.StatusCode, r
}

func (b *bundle) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := b.store.DB().QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// wantRetry posts body to src, signed, and fails the test unless the answer
// is status with a Retry-After.
func (b *bundle) wantRetry(t *testing.T, what, src string, body []byte, status int) {
	t.Helper()
	resp, err := http.DefaultClient.Do(b.request(t, "/in/"+src, b.sources[src].Signer(), body, nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != status || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("%s: %d Retry-After %q, want %d with Retry-After", what, resp.StatusCode, resp.Header.Get("Retry-After"), status)
	}
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func stripeEvent(id, typ, charge, status string, created int64, refunded bool) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":%q,"created":%d,"data":{"object":{"id":%q,"object":"charge","status":%q,"refunded":%t}}}`,
		id, typ, created, charge, status, refunded)
}

func hubspotEvent(eventID, objectID int, attempt int) string {
	return fmt.Sprintf(`{"eventId":%d,"subscriptionId":4461,"portalId":62515,"occurredAt":%d,"subscriptionType":"deal.propertyChange","attemptNumber":%d,"objectId":%d,"propertyName":"dealstage","propertyValue":"closedwon"}`,
		eventID, 1764583200000+eventID, attempt, objectID)
}

// delivery is one provider's way of sending one event.
type delivery struct {
	source string
	body   []byte
	header map[string]string
}

func deliveries() []delivery {
	return []delivery{
		{"std", []byte(`{"type":"invoice.paid","id":"inv_1"}`), map[string]string{"webhook-id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"}},
		{"stripe", stripeEvent("evt_1", "charge.succeeded", "ch_1", "succeeded", 1764583200, false), nil},
		{"gh", []byte(`{"action":"opened","number":1}`), map[string]string{"X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958", "X-GitHub-Event": "issues"}},
		{"shop", []byte(`{"id":820982911946154508,"email":"jon@example.com"}`), map[string]string{
			"X-Shopify-Webhook-Id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", "X-Shopify-Topic": "orders/create",
			"X-Shopify-Shop-Domain": "acme.myshopify.com", "X-Shopify-Triggered-At": "2026-12-01T10:00:00Z"}},
		{"crm", []byte("[" + hubspotEvent(1, 9103311, 0) + "]"), nil},
	}
}

// G2: a redelivery, freshly signed (new timestamp, new signature header),
// is a duplicate; the store holds one row.
func TestSameEventTwice(t *testing.T) {
	t.Parallel()
	for _, d := range deliveries() {
		t.Run(d.source, func(t *testing.T) {
			t.Parallel()
			b := setup(t, 0)
			st, resp := b.post(t, d.source, "/in/"+d.source, d.body, d.header)
			if st != http.StatusAccepted || resp.Status != "accepted" || resp.Events[0].ID == 0 {
				t.Fatalf("first delivery: %d %+v", st, resp)
			}
			body := d.body
			if d.source == "crm" {
				// HubSpot counts attempts in the body; the key must not.
				body = []byte("[" + hubspotEvent(1, 9103311, 3) + "]")
			}
			st, resp = b.post(t, d.source, "/in/"+d.source, body, d.header)
			if st != http.StatusOK || resp.Events[0].Outcome != "duplicate" || resp.Events[0].FirstSeen == nil {
				t.Fatalf("redelivery: %d %+v", st, resp)
			}
			if n := b.count(t, "events"); n != 1 {
				t.Fatalf("events stored: %d, want 1", n)
			}
		})
	}
}

// G2: concurrent identical requests → exactly one 202 and one row.
func TestConcurrentIdentical(t *testing.T) {
	t.Parallel()
	for _, n := range []int{10, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			b := setup(t, 0)
			body := stripeEvent("evt_race", "charge.succeeded", "ch_race", "succeeded", 1764583200, false)
			reqs := make([]*http.Request, n)
			for i := range reqs {
				reqs[i] = b.request(t, "/in/stripe", b.sources["stripe"].Signer(), body, nil)
			}
			var wg sync.WaitGroup
			statuses := make([]int, n)
			start := make(chan struct{})
			for i := range reqs {
				wg.Go(func() {
					<-start
					statuses[i], _ = do(t, reqs[i])
				})
			}
			close(start)
			wg.Wait()
			counts := map[int]int{}
			for _, s := range statuses {
				counts[s]++
			}
			if counts[http.StatusAccepted] != 1 || counts[http.StatusOK] != n-1 {
				t.Fatalf("statuses: %v, want one 202 and %d 200", counts, n-1)
			}
			if rows := b.count(t, "events"); rows != 1 {
				t.Fatalf("events stored: %d, want 1", rows)
			}
		})
	}
}

// Different events of one entity are different events.
func TestEventsOfOneEntity(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	for i, typ := range []string{"charge.created", "charge.updated", "charge.refunded"} {
		body := stripeEvent(fmt.Sprintf("evt_%d", i), typ, "ch_same", "succeeded", 1764583200+int64(i), typ == "charge.refunded")
		if st, resp := b.post(t, "stripe", "/in/stripe", body, nil); st != http.StatusAccepted {
			t.Fatalf("%s: %d %+v", typ, st, resp)
		}
	}
	if n := b.count(t, "events"); n != 3 {
		t.Fatalf("events stored: %d, want 3", n)
	}
	events, err := b.store.List(context.Background(), inbox.Filter{Source: "stripe"})
	if err != nil {
		t.Fatal(err)
	}
	if events[0].EntityID != "ch_same" || events[0].EntityState != "refunded" {
		t.Fatalf("newest event entity: %q state %q", events[0].EntityID, events[0].EntityState)
	}
}

// The same event id for two tenants is two events. (Their bodies differ:
// one signed request sent to two tenants is a replay, see
// TestReplayWithUnsignedPartsChanged.)
func TestTenantsDoNotCollide(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	h := map[string]string{"webhook-id": "msg_same"}
	for _, tenant := range []string{"acme", "globex"} {
		if st, resp := b.post(t, "stdt", "/in/stdt/"+tenant, []byte(`{"type":"x","for":"`+tenant+`"}`), h); st != http.StatusAccepted {
			t.Fatalf("tenant %s: %d %+v", tenant, st, resp)
		}
	}
	if st, _ := b.post(t, "stdt", "/in/stdt/acme", []byte(`{"type":"x","for":"acme"}`), h); st != http.StatusOK {
		t.Fatalf("acme again: %d, want 200", st)
	}
	if n := b.count(t, "events"); n != 2 {
		t.Fatalf("events stored: %d, want 2", n)
	}
}

// G3: nothing unauthenticated is stored, not even a key.
func TestUnauthenticatedStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	body := stripeEvent("evt_auth", "charge.succeeded", "ch_a", "succeeded", 1764583200, false)
	wrong, err := source.New(config.Source{Name: "stripe", Provider: "stripe", Secret: config.NewSecret("whsec_wrong")}, config.Default().Dedupe)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := source.New(config.Source{Name: "stripe", Provider: "stripe", Secret: config.NewSecret(stripeSecret)},
		config.Default().Dedupe, verify.WithClock(func() time.Time { return time.Now().Add(-10 * time.Minute) }))
	if err != nil {
		t.Fatal(err)
	}
	future, err := source.New(config.Source{Name: "stripe", Provider: "stripe", Secret: config.NewSecret(stripeSecret)},
		config.Default().Dedupe, verify.WithClock(func() time.Time { return time.Now().Add(10 * time.Minute) }))
	if err != nil {
		t.Fatal(err)
	}
	tampered := b.request(t, "/in/stripe", b.sources["stripe"].Signer(), body, nil)
	tampered.Body = io.NopCloser(bytes.NewReader(bytes.Replace(body, []byte("ch_a"), []byte("ch_b"), 1)))
	cases := map[string]*http.Request{
		"tampered body":     tampered,
		"wrong secret":      b.request(t, "/in/stripe", wrong.Signer(), body, nil),
		"stale timestamp":   b.request(t, "/in/stripe", stale.Signer(), body, nil),
		"future timestamp":  b.request(t, "/in/stripe", future.Signer(), body, nil),
		"missing signature": b.request(t, "/in/stripe", nil, body, nil),
	}
	for name, req := range cases {
		if st, resp := do(t, req); st != http.StatusUnauthorized || resp.Error == "" {
			t.Errorf("%s: %d %+v, want 401 with a reason", name, st, resp)
		}
	}
	if n := b.count(t, "events"); n != 0 {
		t.Fatalf("events stored: %d, want 0", n)
	}
	if n := b.count(t, "dedupe_keys"); n != 0 {
		t.Fatalf("dedupe keys stored: %d, want 0", n)
	}
	// The genuine event is still new: nothing was planted.
	if st, _ := b.post(t, "stripe", "/in/stripe", body, nil); st != http.StatusAccepted {
		t.Fatalf("genuine delivery after forgeries: %d, want 202", st)
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, 256)
	st, resp := b.post(t, "stripe", "/in/stripe", []byte(`{"object":"event","type":"charge.succeeded"}`), nil)
	if st != http.StatusBadRequest || !strings.Contains(resp.Error, "id") {
		t.Errorf("missing event id: %d %+v, want 400 naming the id", st, resp)
	}
	st, resp = b.post(t, "gh", "/in/gh", []byte(`{"action":"opened"}`), map[string]string{"X-GitHub-Event": "issues"})
	if st != http.StatusBadRequest || !strings.Contains(resp.Error, "X-GitHub-Delivery") {
		t.Errorf("github without X-GitHub-Delivery: %d %+v, want 400 naming the header", st, resp)
	}
	st, _ = b.post(t, "stripe", "/in/stripe", bytes.Repeat([]byte("x"), 300), nil)
	if st != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d, want 413", st)
	}
	st, _ = b.post(t, "stripe", "/in/nope", []byte(`{}`), nil)
	if st != http.StatusNotFound {
		t.Errorf("unknown source: %d, want 404", st)
	}
	resp2, err := http.Get(b.url + "/in/stripe")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", resp2.StatusCode)
	}
	if n := b.count(t, "events") + b.count(t, "dedupe_keys"); n != 0 {
		t.Fatalf("rows written by bad requests: %d", n)
	}
}

// A HubSpot batch of five where two were seen: 202, three new rows, and an
// outcome per event.
func TestHubSpotBatchPartlySeen(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	first := "[" + hubspotEvent(1, 10, 0) + "," + hubspotEvent(2, 10, 0) + "]"
	if st, resp := b.post(t, "crm", "/in/crm", []byte(first), nil); st != http.StatusAccepted || len(resp.Events) != 2 {
		t.Fatalf("first batch: %d %+v", st, resp)
	}
	var parts []string
	for i := 1; i <= 5; i++ {
		parts = append(parts, hubspotEvent(i, 10, 1))
	}
	st, resp := b.post(t, "crm", "/in/crm", []byte("["+strings.Join(parts, ",")+"]"), nil)
	if st != http.StatusAccepted || len(resp.Events) != 5 {
		t.Fatalf("second batch: %d %+v", st, resp)
	}
	want := []string{"duplicate", "duplicate", "accepted", "accepted", "accepted"}
	for i, e := range resp.Events {
		if e.Outcome != want[i] {
			t.Errorf("event %d: %s, want %s", i, e.Outcome, want[i])
		}
	}
	if n := b.count(t, "events"); n != 5 {
		t.Fatalf("events stored: %d, want 5", n)
	}
	// The fixture: three distinct events in one array, tenant from portalId.
	if st, resp := b.post(t, "crm", "/in/crm", fixture(t, "hubspot-batch.json"), nil); st != http.StatusAccepted || len(resp.Events) != 3 {
		t.Fatalf("fixture batch: %d %+v", st, resp)
	}
	events, err := b.store.List(context.Background(), inbox.Filter{Tenant: "62515", Limit: 10})
	if err != nil || len(events) != 8 {
		t.Fatalf("events of portal 62515: %d, %v", len(events), err)
	}
}

func TestSalesforce(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	msg := fixture(t, "salesforce-outbound.xml")
	// Three notifications: add one to the fixture's two.
	third := `<Notification>
    <Id>04l5e00000AbC3AAAV</Id>
    <sObject xsi:type="sf:Opportunity" xmlns:sf="urn:sobject.enterprise.soap.sforce.com">
     <sf:Id>0065e00000ZxCvBAAZ</sf:Id>
     <sf:LastModifiedDate>2026-12-01T10:15:09.000Z</sf:LastModifiedDate>
    </sObject>
   </Notification>
  </notifications>`
	msg = bytes.Replace(msg, []byte("</notifications>"), []byte(third), 1)
	for i, wantRows := range []int{3, 3} {
		st, resp := b.post(t, "sf", "/in/sf", msg, map[string]string{"Content-Type": "text/xml"})
		if st != http.StatusOK || !strings.Contains(resp.Error, "<Ack>true</Ack>") {
			t.Fatalf("delivery %d: %d %s, want 200 with the Ack envelope", i, st, resp.Error)
		}
		if n := b.count(t, "events"); n != wantRows {
			t.Fatalf("delivery %d: events stored %d, want %d", i, n, wantRows)
		}
	}
	other := bytes.Replace(msg, []byte(sfOrg), []byte("00D000000000001AAA"), 1)
	st, resp := do(t, b.request(t, "/in/sf", nil, other, nil))
	if st != http.StatusUnauthorized || strings.Contains(resp.Error, "<Ack>true</Ack>") || !strings.Contains(resp.Error, "Fault") {
		t.Fatalf("wrong organization: %d %s, want 401 with a SOAP fault", st, resp.Error)
	}
}

// G4: when the store fails, the sender is told to retry and no key is kept.
func TestStoreFailureAsksForRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	if _, err := b.store.DB().Exec(`DROP TABLE events`); err != nil {
		t.Fatal(err)
	}
	body := stripeEvent("evt_fail", "charge.succeeded", "ch_f", "succeeded", 1764583200, false)
	b.wantRetry(t, "store down", "stripe", body, http.StatusServiceUnavailable)
	if n := b.count(t, "dedupe_keys"); n != 0 {
		t.Fatalf("dedupe keys kept after a failed store: %d", n)
	}
}

// Every answer is counted by source and outcome.
func TestMetricsCountOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	body := stripeEvent("evt_m", "charge.succeeded", "ch_m", "succeeded", 1764583200, false)
	b.post(t, "stripe", "/in/stripe", body, nil)
	b.post(t, "stripe", "/in/stripe", body, nil)
	do(t, b.request(t, "/in/stripe", nil, body, nil))
	b.post(t, "stripe", "/in/stripe", []byte(`{"object":"event"}`), nil)
	b.post(t, "crm", "/in/crm", fixture(t, "hubspot-batch.json"), nil)
	for _, c := range []struct {
		source, outcome string
		want            float64
	}{
		{"stripe", metrics.ReceivedAccepted, 1},
		{"stripe", metrics.ReceivedDuplicate, 1},
		{"stripe", metrics.ReceivedUnauthenticated, 1},
		{"stripe", metrics.ReceivedInvalid, 1},
		{"crm", metrics.ReceivedAccepted, 3},
	} {
		if got := testutil.ToFloat64(b.metrics.Received.WithLabelValues(c.source, c.outcome)); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.source, c.outcome, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(b.metrics.DedupeSeconds); n != 1 {
		t.Errorf("dedupe latency histogram: %d series", n)
	}
}

// G1, G4: a COMMIT that fails is a 503, and nothing of the event is kept or
// remembered: once the store works again the same delivery is new. The
// failure comes from a deferred foreign key, which SQLite checks only at
// COMMIT, after every statement of the transaction has succeeded.
func TestFailingCommitAsksForRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	if _, err := b.store.DB().Exec(`
		CREATE TABLE commit_parent (id INTEGER PRIMARY KEY);
		CREATE TABLE commit_trap (ref INTEGER REFERENCES commit_parent(id) DEFERRABLE INITIALLY DEFERRED);
		CREATE TRIGGER commit_fails AFTER INSERT ON events BEGIN INSERT INTO commit_trap VALUES (1); END;`); err != nil {
		t.Fatal(err)
	}
	body := stripeEvent("evt_commit", "charge.succeeded", "ch_c", "succeeded", 1764583200, false)
	for range 2 {
		b.wantRetry(t, "failing commit", "stripe", body, http.StatusServiceUnavailable)
	}
	if n := b.count(t, "events") + b.count(t, "dedupe_keys"); n != 0 {
		t.Fatalf("rows kept after a failed commit: %d", n)
	}
	if _, err := b.store.DB().Exec(`DROP TRIGGER commit_fails`); err != nil {
		t.Fatal(err)
	}
	if st, resp := b.post(t, "stripe", "/in/stripe", body, nil); st != http.StatusAccepted {
		t.Fatalf("after the store recovered: %d %+v, want 202", st, resp)
	}
}

// G2: a copy held by another process (a claim not yet committed, through a
// second store on the same file) is in flight: 409 with Retry-After, every
// time, and never remembered as seen; once that claim is released the
// delivery is new.
func TestInFlightElsewhereIsConflict(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	other, err := dsqlite.Open(b.path, dsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	body := stripeEvent("evt_elsewhere", "charge.succeeded", "ch_e", "succeeded", 1764583200, false)
	req := b.request(t, "/in/stripe", b.sources["stripe"].Signer(), body, nil)
	events, err := b.sources["stripe"].Events(req, body, "")
	if err != nil || len(events) != 1 {
		t.Fatalf("events: %v %v", events, err)
	}
	claims, err := other.Claim(context.Background(), time.Hour, events[0].Hash)
	if err != nil || claims[0].Status != dedupe.New {
		t.Fatalf("claim through the other store: %+v %v", claims, err)
	}
	for i := range 2 {
		b.wantRetry(t, fmt.Sprint("delivery ", i, " while in flight elsewhere"), "stripe", body, http.StatusConflict)
	}
	if err := other.Release(context.Background(), claims[0].Lease); err != nil {
		t.Fatal(err)
	}
	if st, resp := b.post(t, "stripe", "/in/stripe", body, nil); st != http.StatusAccepted {
		t.Fatalf("after the other claim was released: %d %+v, want 202", st, resp)
	}
}

// G3: authentication comes before splitting and keying: an unsigned body
// that has no event id is 401, not 400, for every provider.
func TestAuthenticateBeforeSplit(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	for _, name := range []string{"std", "stripe", "gh", "shop", "crm"} {
		st, resp := do(t, b.request(t, "/in/"+name, nil, []byte(`{"no":"id"}`), nil))
		if st != http.StatusUnauthorized {
			t.Errorf("%s: unsigned body without an id: %d %+v, want 401", name, st, resp)
		}
	}
	if n := b.count(t, "events") + b.count(t, "dedupe_keys"); n != 0 {
		t.Fatalf("rows written: %d", n)
	}
}

// The log line behind a 503 carries the store's own error, not only the
// message the sender gets.
func TestStoreFailureLogsTheCause(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	var mu sync.Mutex
	store, err := inboxsqlite.Open(t.TempDir()+"/hookgate.db", inboxsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	src, err := source.New(testSources()[2], config.Default().Dedupe)
	if err != nil {
		t.Fatal(err)
	}
	c := newCommitter(store, intake.CommitterOptions{})
	defer c.Close()
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	srv := httptest.NewServer(intake.NewHandler(intake.Options{Sources: []*source.Source{src}, Committer: c, Logger: logger}))
	defer srv.Close()
	if _, err := store.DB().Exec(`DROP TABLE events`); err != nil {
		t.Fatal(err)
	}
	body := stripeEvent("evt_log", "charge.succeeded", "ch_l", "succeeded", 1764583200, false)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/in/stripe", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Signer().Sign(req, body); err != nil {
		t.Fatal(err)
	}
	if st, _ := do(t, req); st != http.StatusServiceUnavailable {
		t.Fatalf("store down: %d, want 503", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "no such table: events") {
		t.Fatalf("log %q does not carry the store's error", logs.String())
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
