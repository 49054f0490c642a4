package metrics_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hookgate/hookgate/internal/metrics"
)

// A Metrics is the worker pool's observer: each delivery attempt and each
// dead event is counted by its labels.
func ExampleMetrics_Delivered() {
	m := metrics.New()
	m.Delivered("stripe", "app", metrics.DeliveryRetry, 120*time.Millisecond)
	m.Delivered("stripe", "app", metrics.DeliveryDelivered, 80*time.Millisecond)
	m.Dead("stripe", metrics.DeadInvalid)

	fmt.Println(testutil.ToFloat64(m.Deliveries.WithLabelValues("stripe", "app", metrics.DeliveryDelivered)))
	fmt.Println(testutil.ToFloat64(m.DeadEvents.WithLabelValues("stripe", metrics.DeadInvalid)))
	// Output:
	// 1
	// 1
}
