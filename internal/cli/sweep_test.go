package cli_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/inbox"
)

// sweepDB holds, from 40 days ago, two processed events and a received
// one whose one-hour keys have long expired, and, from an hour ago, a
// processed event with a one-day key. It returns them in that order.
func sweepDB(t *testing.T) (*opsDB, []int64) {
	t.Helper()
	d := newOpsDB(t, time.Now().Add(-40*24*time.Hour))
	old := d.accept("stripe", "acme", "1", "2", "3")
	d.finish(inbox.StatusProcessed, "", old[0], old[1])
	d.clock.Advance(40*24*time.Hour - time.Hour)
	recent := d.acceptWindow(24*time.Hour, "stripe", "acme", "4")
	d.finish(inbox.StatusProcessed, "", recent[0])
	return d, append(old, recent...)
}

func (d *opsDB) exists(id int64) bool {
	d.t.Helper()
	_, err := d.store.Get(d.t.Context(), id)
	if err != nil && !errors.Is(err, inbox.ErrNotFound) {
		d.t.Fatal(err)
	}
	return err == nil
}

func TestSweep(t *testing.T) {
	t.Parallel()
	d, ids := sweepDB(t)
	golden(t, "sweep", d.mustRun("sweep"))
	for i, want := range []bool{false, false, true, true} {
		if got := d.exists(ids[i]); got != want {
			t.Errorf("event %d exists = %v, want %v", ids[i], got, want)
		}
	}
	// The keys of the swept events are gone: they are new again.
	if again := d.accept("stripe", "acme", "1", "4"); len(again) != 1 {
		t.Errorf("after the sweep, %d of (1, 4) are new, want 1 (the expired key)", len(again))
	}
	if out := d.mustRun("sweep"); out != "removed 1 expired dedupe keys and 0 events processed more than 30d ago\n" {
		t.Errorf("second sweep = %q", out)
	}
}

// TestSweepRetentionFromConfig: a retention longer than the events' age
// keeps them; only the expired keys go.
func TestSweepRetentionFromConfig(t *testing.T) {
	t.Parallel()
	d, ids := sweepDB(t)
	cfg := filepath.Join(t.TempDir(), "hookgate.yaml")
	if err := os.WriteFile(cfg, []byte("retention: 2000h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := d.mustRun("sweep", "--config", cfg)
	if out != "removed 3 expired dedupe keys and 0 events processed more than 83d8h ago\n" {
		t.Errorf("sweep = %q", out)
	}
	for _, id := range ids {
		if !d.exists(id) {
			t.Errorf("event %d removed within the retention", id)
		}
	}
}
