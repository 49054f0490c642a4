package admin_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/inbox"
)

// TestListAfter: after= reads forwards, the way a follower does: the
// events with a larger id, and of those the limit oldest, newest first
// like every list; next is the after= of the next page. Reading page by
// page from an id gives every later event once, with the filters
// applied.
func TestListAfter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.accept("shop", "1", "2", "3")
	c := b.accept("crm", "4")
	d := b.accept("shop", "5", "6")

	list := func(format string, args ...any) listView {
		t.Helper()
		var l listView
		b.get(fmt.Sprintf(format, args...), http.StatusOK, &l)
		return l
	}
	l := list("/api/events?after=%d", a[0])
	if want := []int64{d[1], d[0], c[0], a[2], a[1]}; !slices.Equal(ids(l), want) || l.Next != 0 {
		t.Errorf("after %d: %v next %d, want %v and no next page", a[0], ids(l), l.Next, want)
	}
	l = list("/api/events?after=%d&limit=2", a[0])
	if want := []int64{a[2], a[1]}; !slices.Equal(ids(l), want) || l.Next != a[2] {
		t.Errorf("after %d limit 2: %v next %d, want the two oldest %v and next %d", a[0], ids(l), l.Next, want, a[2])
	}
	l = list("/api/events?after=%d", d[1])
	if len(l.Events) != 0 || l.Next != 0 {
		t.Errorf("after the newest: %v next %d, want nothing", ids(l), l.Next)
	}
	l = list("/api/events?after=%d&before=%d", a[1], d[0])
	if want := []int64{c[0], a[2]}; !slices.Equal(ids(l), want) {
		t.Errorf("between %d and %d: %v, want %v", a[1], d[0], ids(l), want)
	}

	var got []int64
	after := a[0]
	for range 10 {
		l = list("/api/events?source=shop&limit=1&after=%d", after)
		for _, e := range slices.Backward(l.Events) {
			got = append(got, e.ID)
			if e.Source != "shop" {
				t.Errorf("source=shop answered event %d of %s", e.ID, e.Source)
			}
		}
		if l.Next == 0 {
			break
		}
		after = l.Next
	}
	if want := []int64{a[1], a[2], d[0], d[1]}; !slices.Equal(got, want) {
		t.Errorf("paging forwards through shop from %d: %v, want %v", a[0], got, want)
	}
}

// TestListAfterMistakes: an after= that is not an event id is a 400 that
// names it.
func TestListAfterMistakes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, v := range []string{"x", "0", "-3", "1.5"} {
		b.wantError(http.MethodGet, "/api/events?after="+v, "", http.StatusBadRequest, fmt.Sprintf("after %q: want an event id", v))
	}
}

// TestShowEventPayloadBase64: payload=base64 answers the body as it was
// received, byte for byte, in payload_base64, whatever it is: payload
// would give a JSON body re-encoded without its spacing, and a text body
// goes in payload_text.
func TestShowEventPayloadBase64(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i, body := range []string{"{\n  \"id\": \"evt_1\",\n  \"amount\": 100\n}\n", "id=evt_2&amount=100"} {
		eventID := fmt.Sprintf("evt_%d", i+1)
		k := dedupe.Key{Tenant: "acme", Provider: "shop", ObjectType: "charge", Action: "updated", EventID: eventID}
		out, err := b.store.Accept(t.Context(), []inbox.Item{{Window: time.Hour, Event: inbox.Event{
			Hash: k.Hash(), Scope: k.Scope(), Source: "shop", Provider: "standard", Tenant: "acme", EventID: eventID,
			Payload: []byte(body), Headers: map[string]string{"Webhook-Id": "msg_" + eventID},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		target := fmt.Sprintf("/api/events/%d", out[0].ID)
		var plain eventView
		b.get(target, http.StatusOK, &plain)
		if string(plain.Payload) == body || plain.PayloadBase64 != nil {
			t.Errorf("%s: payload %q, payload_base64 %q; want the body re-encoded or as text", target, plain.Payload, plain.PayloadBase64)
		}
		var v eventView
		b.get(target+"?payload=base64", http.StatusOK, &v)
		if string(v.PayloadBase64) != body || v.Payload != nil || v.PayloadText != "" {
			t.Errorf("%s?payload=base64: payload_base64 %q, payload %q, payload_text %q; want the body as received in payload_base64 alone",
				target, v.PayloadBase64, v.Payload, v.PayloadText)
		}
		if v.Headers["Webhook-Id"] != "msg_"+eventID || v.EventID != eventID {
			t.Errorf("%s?payload=base64: headers %v, event id %q; want the rest of the event as without it", target, v.Headers, v.EventID)
		}
		b.wantError(http.MethodGet, target+"?payload=hex", "", http.StatusBadRequest, `payload "hex": want base64`)
	}
}
