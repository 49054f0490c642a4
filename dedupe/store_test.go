package dedupe_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/memory"
)

func TestStatusString(t *testing.T) {
	t.Parallel()
	for s, want := range map[dedupe.Status]string{
		dedupe.New:       "new",
		dedupe.Duplicate: "duplicate",
		dedupe.InFlight:  "in-flight",
		0:                "Status(0)",
		9:                "Status(9)",
	} {
		if got := s.String(); got != want {
			t.Errorf("Status(%d).String() = %q, want %q", uint8(s), got, want)
		}
	}
}

func TestClaimOne(t *testing.T) {
	t.Parallel()
	store := memory.New(memory.Options{})
	h := dedupe.Key{EventID: "1"}.Hash()
	r, err := dedupe.ClaimOne(t.Context(), store, time.Minute, h)
	if err != nil || r.Status != dedupe.New || r.Lease.Hash != h {
		t.Fatalf("ClaimOne = %+v, %v; want New with a lease on %s", r, err, h)
	}
	if r, err = dedupe.ClaimOne(t.Context(), store, time.Minute, h); err != nil || r.Status != dedupe.InFlight {
		t.Fatalf("second ClaimOne = %+v, %v; want InFlight", r, err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := dedupe.ClaimOne(ctx, store, time.Minute, h); !errors.Is(err, context.Canceled) {
		t.Fatalf("ClaimOne with a cancelled context: %v, want context.Canceled", err)
	}
}
