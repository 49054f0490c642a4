package console_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/console"
	"github.com/hookgate/hookgate/internal/inbox"
)

// A version tie says so: in the events list, on the event's page, and to
// the apply filter (outcome=tie).
func TestTieShown(t *testing.T) {
	t.Parallel()
	b := setup(t, console.Options{})
	var items []inbox.Item
	for _, e := range []struct{ id, state string }{{"evt_created", "requires_payment_method"}, {"evt_succeeded", "succeeded"}} {
		k := dedupe.Key{Tenant: "acme", Provider: "stripe", ObjectType: "payment_intent", EventID: e.id}
		items = append(items, inbox.Item{Window: time.Hour, Event: inbox.Event{
			Hash: k.Hash(), Scope: k.Scope(), Source: "stripe", Provider: "stripe", Tenant: "acme", EventID: e.id,
			Type: "payment_intent." + e.state, EntityType: "payment_intent", EntityID: "pi_1", EntityVersion: "1712000000",
			EntityOrder: 1712000000, EntityState: e.state, Payload: []byte(jsonID(e.id)),
		}})
	}
	out, err := b.store.Accept(t.Context(), items)
	if err != nil {
		t.Fatal(err)
	}
	leased, err := b.store.Lease(t.Context(), "test", 2, time.Minute)
	if err != nil || len(leased) != 2 {
		t.Fatalf("lease: %v %v", leased, err)
	}
	if _, err := b.store.Apply(t.Context(), leased); err != nil {
		t.Fatal(err)
	}
	first, tie := out[0].ID, out[1].ID
	b.signIn()

	list := b.get("/ui/events")
	row := func(id int64) string {
		_, rest, _ := strings.Cut(list, fmt.Sprintf(`<a href="/ui/events/%d">`, id))
		r, _, _ := strings.Cut(rest, "</tr>")
		return r
	}
	if r := row(tie); !strings.Contains(r, "applied (tie)") || !strings.Contains(r, "requires_payment_method-&gt;succeeded") {
		t.Errorf("the tie's row does not say it is a tie with its transition:\n%s", r)
	}
	if r := row(first); strings.Contains(r, "tie") {
		t.Errorf("the first event's row says tie:\n%s", r)
	}
	if page := b.get(fmt.Sprintf("/ui/events/%d", tie)); !strings.Contains(page, "applied (a tie: the entity had this version already") {
		t.Errorf("the tie's page does not say it is a tie:\n%s", page)
	}
	var found []string
	for _, m := range rowLink.FindAllStringSubmatch(b.get("/ui/events?outcome=tie"), -1) {
		found = append(found, m[1])
	}
	if fmt.Sprint(found) != fmt.Sprintf("[%d]", tie) {
		t.Errorf("outcome=tie lists %v, want [%d]", found, tie)
	}
}
