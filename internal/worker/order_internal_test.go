package worker

import (
	"errors"
	"testing"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/inbox"
)

func TestOrderKey(t *testing.T) {
	t.Parallel()
	ev := &inbox.Event{Tenant: "acme", EntityType: "order", EntityID: "17", Hash: dedupe.Hash{1},
		Payload: []byte(`{"customer":{"id":42,"a.b":"dotted"},"none":null}`), Headers: map[string]string{"X-Shop": "s1"}}
	bare := &inbox.Event{Tenant: "acme", Hash: dedupe.Hash{2}, Payload: []byte(`{}`)}
	for _, tc := range []struct {
		sel  string
		ev   *inbox.Event
		want string
	}{
		{"", ev, "acme/order/17"},
		{"json:customer.id", ev, "acme/42"},
		{"json:customer.a.b", ev, "acme/order/17"},
		{"header:x-shop", ev, "acme/s1"},
		{"const:all", ev, "acme/all"},
		{"json:none", ev, "acme/order/17"},
		{"json:missing", bare, bare.Hash.String()},
	} {
		var sel config.Selector
		if tc.sel != "" {
			var err error
			if sel, err = config.ParseSelector(tc.sel); err != nil {
				t.Fatal(err)
			}
		}
		if got := orderKey(tc.ev, sel); got != tc.want {
			t.Errorf("orderKey(%q) = %q, want %q", tc.sel, got, tc.want)
		}
	}
}

// A store that cannot keep per-key order is refused for an ordered
// destination, rather than delivering its keys in parallel.
func TestOrderNeedsAnOrderedStore(t *testing.T) {
	t.Parallel()
	plain := struct{ inbox.Store }{}
	src := Source{Name: "s", Destinations: []Destination{{Order: OrderEntity}}}
	src.Destinations[0].Name = "app"
	_, err := New(Options{Store: plain, Sources: map[string]Source{"s": src}})
	if !errors.Is(err, ErrNoOrder) {
		t.Fatalf("New = %v, want ErrNoOrder", err)
	}
	src.Destinations[0].Order = ""
	if _, err := New(Options{Store: plain, Sources: map[string]Source{"s": src}}); err != nil {
		t.Fatalf("New without order = %v", err)
	}
}
