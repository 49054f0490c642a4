package deliver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/verify"
)

var batch = []deliver.Message{
	{WebhookID: "id-1", Payload: []byte(`{ "id": "evt_1",  "n": 1 }`), Source: "shop", Tenant: "t1", Type: "orders/create",
		Headers: map[string]string{"X-Hookgate-Source": "shop"}},
	{WebhookID: "id-2", Payload: []byte(`<Notification><Id>2</Id></Notification>`), Source: "sf", Tenant: "t2", Type: "Account",
		Headers: map[string]string{deliver.HeaderSequence: "3", deliver.HeaderSkipped: "1"}},
}

func TestDeliverBatch(t *testing.T) {
	t.Parallel()
	url, got := destination(t, status(http.StatusNoContent))
	d := deliver.Destination{Name: "app", URL: url, Signer: signer(t), Headers: map[string]string{
		"Authorization": "Bearer x", "Webhook-Batch-Count": "99",
	}}
	out := newClient(t).DeliverBatch(context.Background(), d, batch)
	if !out.Delivered || out.Code != http.StatusNoContent || out.Err != nil {
		t.Fatalf("outcome = %+v, want delivered with 204", out.Outcome)
	}
	if len(out.Results) != 2 || out.Results[0].Status != deliver.ResultOK || out.Results[1].Status != deliver.ResultOK {
		t.Errorf("results = %+v, want both ok (an answer without a results document)", out.Results)
	}
	r := <-got
	if r.err != nil {
		t.Errorf("the batch's signature does not verify: %v", r.err)
	}
	if id := r.header.Get(verify.HeaderWebhookID); id != out.ID || !strings.HasPrefix(id, "batch_") {
		t.Errorf("webhook-id = %q, want the batch's own %q", id, out.ID)
	}
	if n := r.header.Values(deliver.HeaderBatchCount); !slices.Equal(n, []string{"2"}) {
		t.Errorf("%s = %q, want 2 (the destination's headers cannot set it)", deliver.HeaderBatchCount, n)
	}
	if ct, a := r.header.Get("Content-Type"), r.header.Get("Authorization"); ct != "application/json" || a != "Bearer x" {
		t.Errorf("Content-Type %q, Authorization %q: want JSON and the destination's header", ct, a)
	}
	want := `[{"webhook_id":"id-1","type":"orders/create","source":"shop","tenant":"t1","payload":{ "id": "evt_1",  "n": 1 }},` +
		`{"webhook_id":"id-2","type":"Account","source":"sf","tenant":"t2","sequence":3,"skipped":1,"payload":"\u003cNotification\u003e\u003cId\u003e2\u003c/Id\u003e\u003c/Notification\u003e"}]`
	if string(r.body) != want {
		t.Errorf("body =\n%s\nwant\n%s", r.body, want)
	}
	var elems []map[string]any
	if err := json.Unmarshal(r.body, &elems); err != nil || len(elems) != 2 {
		t.Fatalf("body is not a JSON array of two: %v", err)
	}
	if p := elems[1]["payload"]; p != string(batch[1].Payload) {
		t.Errorf("the XML payload came as %q, want it as a string", p)
	}
	another := newClient(t).DeliverBatch(context.Background(), d, batch[:1])
	if another.ID == out.ID {
		t.Errorf("two batches share the webhook-id %q", out.ID)
	}
	<-got
}

func TestDeliverBatchResults(t *testing.T) {
	t.Parallel()
	url, got := destination(t, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"results":[{"webhook_id":"id-2","status":"reject","error":"bad record at \u0001/hook/secret-token"},{"webhook_id":"id-1","status":"ok"}]}`)
	})
	d := deliver.Destination{Name: "app", URL: url + "/hook/secret-token"}
	out := newClient(t).DeliverBatch(context.Background(), d, batch)
	<-got
	want := []deliver.Result{{Status: deliver.ResultOK}, {Status: deliver.ResultReject, Error: "bad record at \uFFFD…"}}
	if !out.Delivered || !slices.Equal(out.Results, want) {
		t.Errorf("outcome = %+v, results %q; want delivered, results %q (the error safe to log, the URL's path hidden)", out.Outcome, out.Results, want)
	}
}

func TestDeliverBatchFails(t *testing.T) {
	t.Parallel()
	url, got := destination(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "7")
		http.Error(w, `{"results":[]}`, http.StatusServiceUnavailable)
	})
	out := newClient(t).DeliverBatch(context.Background(), deliver.Destination{Name: "app", URL: url}, batch)
	<-got
	if out.Delivered || !out.Retryable || out.RetryAfter.Seconds() != 7 || out.Results != nil || out.Err == nil {
		t.Errorf("outcome = %+v, results %v; want a retryable failure after 7s and no results", out.Outcome, out.Results)
	}
}

// An answer longer than ResultsSize is not taken as "all delivered":
// its results cannot be read, and every event is retried.
func TestDeliverBatchHugeAnswer(t *testing.T) {
	t.Parallel()
	url, got := destination(t, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"results":[{"webhook_id":"id-1","status":"ok","error":"`+strings.Repeat("x", deliver.ResultsSize)+`"}]}`)
	})
	out := newClient(t).DeliverBatch(context.Background(), deliver.Destination{Name: "app", URL: url}, batch)
	<-got
	if !out.Delivered || len(out.Body) > 1<<10 {
		t.Fatalf("outcome = %+v, want delivered with the answer's start", out.Outcome)
	}
	for i, r := range out.Results {
		if r.Status != deliver.ResultRetry || !strings.Contains(r.Error, "longer than") {
			t.Errorf("result %d = %+v, want retry: the answer is too long", i, r)
		}
	}
}

func TestParseResults(t *testing.T) {
	t.Parallel()
	ids := []string{"a", "b", "c"}
	ok := deliver.Result{Status: deliver.ResultOK}
	retry := func(msg string) deliver.Result { return deliver.Result{Status: deliver.ResultRetry, Error: msg} }
	const missing = "the destination's results leave it out"
	tests := []struct {
		name, body string
		want       []deliver.Result
	}{
		{"empty body", ``, []deliver.Result{ok, ok, ok}},
		{"text", `OK`, []deliver.Result{ok, ok, ok}},
		{"another object", `{"received":3}`, []deliver.Result{ok, ok, ok}},
		{"an array", `[{"webhook_id":"a","status":"reject"}]`, []deliver.Result{ok, ok, ok}},
		{"every status", `{"results":[{"webhook_id":"c","status":"reject","error":"no such customer"},{"webhook_id":"a","status":"ok","error":"ignored"},{"webhook_id":"b","status":"retry","error":"locked"}]}`,
			[]deliver.Result{ok, retry("locked"), {Status: deliver.ResultReject, Error: "no such customer"}}},
		{"missing ids", `{"results":[{"webhook_id":"b","status":"ok"}]}`, []deliver.Result{retry(missing), ok, retry(missing)}},
		{"no results", `{"results":[]}`, []deliver.Result{retry(missing), retry(missing), retry(missing)}},
		{"results null", `{"results":null}`, []deliver.Result{retry("the destination's results document has no array of results"), retry("the destination's results document has no array of results"), retry("the destination's results document has no array of results")}},
		{"results not an array", `{"results":{"a":"ok"}}`, []deliver.Result{retry("the destination's results document has no array of results"), retry("the destination's results document has no array of results"), retry("the destination's results document has no array of results")}},
		{"unknown status", `{"results":[{"webhook_id":"a","status":"OK"},{"webhook_id":"b","status":"failed"},{"webhook_id":"c","status":"ok"}]}`,
			[]deliver.Result{retry(`the destination's results give it the unknown status "OK"`), retry(`the destination's results give it the unknown status "failed"`), ok}},
		{"duplicate ids agreeing", `{"results":[{"webhook_id":"a","status":"ok"},{"webhook_id":"a","status":"ok"},{"webhook_id":"b","status":"reject","error":"x"},{"webhook_id":"b","status":"reject","error":"y"},{"webhook_id":"c","status":"ok"}]}`,
			[]deliver.Result{ok, {Status: deliver.ResultReject, Error: "x"}, ok}},
		{"duplicate ids disagreeing", `{"results":[{"webhook_id":"a","status":"ok"},{"webhook_id":"a","status":"reject"},{"webhook_id":"b","status":"retry"},{"webhook_id":"b","status":"ok"},{"webhook_id":"b","status":"retry"},{"webhook_id":"c","status":"ok"}]}`,
			[]deliver.Result{retry("the destination's results give it different statuses"), retry("the destination's results give it different statuses"), ok}},
		{"elements ignored", `{"results":[1,"a",{"webhook_id":7,"status":"ok"},{"webhook_id":"zz","status":"reject"},{"status":"reject"},{"webhook_id":"a","status":"ok"},{"webhook_id":"b","status":"ok"},{"webhook_id":"c","status":"ok"}]}`,
			[]deliver.Result{ok, ok, ok}},
		{"too long", `{"results":[]}` + strings.Repeat(" ", deliver.ResultsSize),
			[]deliver.Result{retry("the destination's answer is longer than 1048576 bytes: its results cannot be read"), retry("the destination's answer is longer than 1048576 bytes: its results cannot be read"), retry("the destination's answer is longer than 1048576 bytes: its results cannot be read")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := deliver.ParseResults([]byte(tt.body), ids, func(s string) string { return s })
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// Two messages of one batch under one webhook id (one key stored again
// after its dedupe window) each take the answer for it.
func TestParseResultsSharedID(t *testing.T) {
	t.Parallel()
	got := deliver.ParseResults([]byte(`{"results":[{"webhook_id":"a","status":"reject"}]}`), []string{"a", "a"}, func(s string) string { return s })
	if want := (deliver.Result{Status: deliver.ResultReject}); got[0] != want || got[1] != want {
		t.Errorf("got %q, want both rejected", got)
	}
}
