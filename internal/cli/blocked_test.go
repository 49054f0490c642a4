package cli_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// The operator finds a key an ordered destination holds behind a failed
// delivery with `blocked list`, and lets it move on with `blocked skip`:
// the key's next delivery is leased again, carrying the skip.
func TestBlockedListAndSkip(t *testing.T) {
	t.Parallel()
	d := newOpsDB(t, time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC))
	ledger := inbox.Lane{Source: "shop", Destination: "ledger"}
	ids := d.accept("shop", "acme", "o1-v1", "o1-v2", "o2-v1")
	leased, err := d.store.Lease(t.Context(), "test", 10, time.Minute)
	if err != nil || len(leased) != 3 {
		t.Fatalf("lease: %d, %v", len(leased), err)
	}
	keys := []string{"order:1", "order:1", "order:2"}
	results := make([]inbox.Result, len(ids))
	for i, id := range ids {
		results[i] = inbox.Result{ID: id, Status: inbox.StatusProcessed, Destinations: []string{"ledger"},
			OrderKeys: map[string]string{"ledger": keys[i]}}
	}
	if err := d.store.Finish(t.Context(), "test", results); err != nil {
		t.Fatal(err)
	}
	out, err := d.store.DispatchOrdered(t.Context(), "n1", ledger, nil, 10, time.Minute)
	if err != nil || len(out.Tasks) != 2 {
		t.Fatalf("dispatch: %d tasks, %v; want the heads of both keys", len(out.Tasks), err)
	}
	var done []inbox.Done
	for _, task := range out.Tasks {
		dn := inbox.Done{Status: inbox.DeliveryDelivered, Attempt: inbox.Attempt{EventID: task.Event.ID, Destination: "ledger", At: d.clock.Now(), Code: 200}}
		if task.Event.ID == ids[0] {
			dn.Status, dn.Block, dn.Attempt.Code, dn.Attempt.Error = inbox.DeliveryFailed, true, 400, "refused"
		}
		done = append(done, dn)
	}
	if out, err = d.store.DispatchOrdered(t.Context(), "n1", ledger, done, 10, time.Minute); err != nil || len(out.Tasks) != 0 {
		t.Fatalf("dispatch after the block: %d tasks, %v; want none", len(out.Tasks), err)
	}

	var listed struct {
		Source, Destination, Key string
		EventID                  int64 `json:"event_id"`
	}
	if err := json.Unmarshal([]byte(d.mustRun("blocked", "list", "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	if listed.Source != "shop" || listed.Destination != "ledger" || listed.Key != "order:1" || listed.EventID != ids[0] {
		t.Fatalf("blocked list --json: %+v, want order:1 of shop/ledger blocked by %d", listed, ids[0])
	}
	if table := d.mustRun("blocked", "list"); !strings.Contains(table, "order:1") || !strings.Contains(table, strconv.FormatInt(ids[0], 10)) {
		t.Fatalf("blocked list:\n%s", table)
	}
	if _, _, err := d.run("blocked", "skip", "--source", "shop", "--destination", "ledger", "--key", "order:2"); err == nil ||
		!strings.Contains(err.Error(), "not blocked") {
		t.Fatalf("skip of a key not blocked: %v, want an error saying so", err)
	}
	if got := d.mustRun("blocked", "skip", "--source", "shop", "--destination", "ledger", "--key", "order:1"); !strings.Contains(got, "skipped order:1") {
		t.Fatalf("blocked skip: %q", got)
	}
	if got := d.mustRun("blocked", "list"); !strings.Contains(got, "no blocked keys") {
		t.Fatalf("blocked list after the skip:\n%s", got)
	}
	out, err = d.store.DispatchOrdered(t.Context(), "n1", ledger, nil, 10, time.Minute)
	if err != nil || len(out.Tasks) != 1 || out.Tasks[0].Event.ID != ids[1] || out.Tasks[0].Delivery.Skipped != 1 {
		t.Fatalf("after the skip: %+v, %v; want o1-v2 with one skipped", out.Tasks, err)
	}
}
