package worker_test

import (
	"testing"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/worker"
)

// A pool built in code with zero Options behaves as one built from a
// configuration file that sets none of its fields: the two share one set
// of defaults.
func TestDefaultsAreTheConfigurations(t *testing.T) {
	t.Setenv("SHOP_SECRET", "s3cret-s3cret-s3cret")
	cfg, err := config.Parse([]byte(`
sources:
  - name: shop
    provider: stripe
    secret: env:SHOP_SECRET
    destinations:
      - name: app
        url: http://127.0.0.1:9/hooks
`))
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Sources[0].Destinations[0]
	for _, c := range []struct {
		name       string
		code, file any
	}{
		{"workers", worker.DefaultWorkers, cfg.Workers},
		{"batch", worker.DefaultBatch, cfg.Batch},
		{"lease", worker.DefaultLease, time.Duration(cfg.Lease)},
		{"retry_initial", worker.DefaultBackoffBase, time.Duration(d.RetryInitial)},
		{"retry_max_delay", worker.DefaultBackoffMax, time.Duration(d.RetryMaxDelay)},
		{"max_attempts", worker.DefaultMaxAttempts, d.MaxAttempts},
		{"max_in_flight", worker.DefaultMaxInFlight, d.MaxInFlight},
		{"pause_for", worker.DefaultPauseFor, time.Duration(d.PauseFor)},
	} {
		if c.code != c.file {
			t.Errorf("%s: %v in code, %v from a file that sets none", c.name, c.code, c.file)
		}
	}
}
