package redis

import (
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/redis/redistest"
)

// TestClaimSentAgain: a claim the client sends again with the same tokens,
// because the answer to the first was lost, is New again instead of
// finding its own lease in flight; a claim with another token is not.
func TestClaimSentAgain(t *testing.T) {
	t.Parallel()
	client, prefix := redistest.New(t)
	s, err := New(client, Options{Prefix: prefix, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{s.Key(dedupe.Key{EventID: "a"}.Hash())}
	status := func(token string) int64 {
		t.Helper()
		raw, err := s.run(t.Context(), "claim", claimScript, keys, append(s.args(1, time.Minute), token))
		if err != nil {
			t.Fatal(err)
		}
		return asInt(raw.([]any)[0].([]any)[0])
	}
	if got := status("7"); got != int64(dedupe.New) {
		t.Fatalf("first claim = %d, want New", got)
	}
	if got := status("7"); got != int64(dedupe.New) {
		t.Fatalf("the same claim sent again = %d, want New", got)
	}
	if got := status("8"); got != int64(dedupe.InFlight) {
		t.Fatalf("another claim = %d, want InFlight", got)
	}
}
