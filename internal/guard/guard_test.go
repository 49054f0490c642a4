package guard_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/internal/guard"
)

// from returns a request whose TCP peer is addr.
func from(addr string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = addr
	return r
}

// block fails r's address until it is blocked.
func block(l *guard.Limiter, r *http.Request) {
	for range guard.Failures {
		l.Failed(r)
	}
}

// The limiter remembers at most MaxAddresses: a flood of addresses
// forgets the oldest, not the memory's bound.
func TestTrackedAddressesAreBounded(t *testing.T) {
	t.Parallel()
	l := guard.New(guard.Options{MaxAddresses: 3, Now: dedupetest.NewClock(time.Now()).Now})
	first := from("192.0.2.1:1000")
	block(l, first)
	for _, a := range []string{"192.0.2.2:1", "192.0.2.3:1", "192.0.2.4:1"} {
		block(l, from(a))
	}
	if n := l.Tracked(); n != 3 {
		t.Errorf("%d addresses tracked, want 3", n)
	}
	if d := l.Blocked(first); d != 0 {
		t.Errorf("the oldest address is still blocked (%v), want forgotten", d)
	}
	if d := l.Blocked(from("192.0.2.4:2")); d != guard.FirstBlock {
		t.Errorf("the newest address is blocked %v, want %v", d, guard.FirstBlock)
	}
}

// An IPv6 client is one /64: a new address in it is blocked too; an IPv4
// client is its own address, whatever its port.
func TestClientAddress(t *testing.T) {
	t.Parallel()
	l := guard.New(guard.Options{})
	block(l, from("[2001:db8:1:2::1]:443"))
	block(l, from("198.51.100.7:1234"))
	for addr, blocked := range map[string]bool{
		"[2001:db8:1:2:ffff::9]:1": true,
		"[2001:db8:1:3::1]:1":      false,
		"198.51.100.7:9":           true,
		"198.51.100.8:1234":        false,
	} {
		if got := l.Blocked(from(addr)) > 0; got != blocked {
			t.Errorf("%s blocked = %v, want %v", addr, got, blocked)
		}
	}
}
