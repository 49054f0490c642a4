package deliver_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/verify"
)

// A signed delivery: the destination verifies it with the same secret and
// sees the event's key as webhook-id.
func Example() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	v, err := verify.NewStandard(secret)
	if err != nil {
		log.Fatal(err)
	}
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Println("verified:", v.Verify(r, body) == nil, "id:", r.Header.Get("webhook-id"))
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer app.Close()

	signer, err := verify.NewStandard(secret)
	if err != nil {
		log.Fatal(err)
	}
	c := deliver.New(app.Client())
	out := c.Deliver(context.Background(),
		deliver.Destination{Name: "app", URL: app.URL, Signer: signer, Timeout: 10 * time.Second},
		deliver.Message{WebhookID: "9f86d081884c7d659a2feaa0c55ad015", Payload: []byte(`{"id":"evt_1"}`)})
	fmt.Println("delivered:", out.Delivered, "retryable:", out.Retryable, "code:", out.Code, "retry after:", out.RetryAfter)
	// Output:
	// verified: true id: 9f86d081884c7d659a2feaa0c55ad015
	// delivered: false retryable: true code: 503 retry after: 30s
}

// Full jitter: the delay is uniform below a ceiling that doubles per
// attempt up to the maximum.
func ExampleBackoff() {
	half := func() float64 { return 0.5 }
	for attempt := range 4 {
		fmt.Println(deliver.Backoff(attempt, time.Second, 5*time.Second, half))
	}
	// Output:
	// 500ms
	// 1s
	// 2s
	// 2.5s
}

// The delay before the next attempt: the backoff, or the destination's
// Retry-After when that is longer, never beyond the maximum.
func ExampleNextDelay() {
	half := func() float64 { return 0.5 }
	fmt.Println(deliver.NextDelay(1, time.Second, time.Hour, 0, half))
	fmt.Println(deliver.NextDelay(4, time.Second, time.Hour, 0, half))
	fmt.Println(deliver.NextDelay(1, time.Second, time.Hour, 2*time.Minute, half))
	fmt.Println(deliver.NextDelay(1, time.Second, time.Hour, 100*365*24*time.Hour, half))
	fmt.Println(deliver.NextDelay(10000, time.Second, time.Hour, 0, half))
	// Output:
	// 500ms
	// 4s
	// 2m0s
	// 1h0m0s
	// 30m0s
}
