package dedupe_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/memory"
)

// A delivery is claimed, made durable, then committed: the provider's retry
// of the same event is a duplicate.
func ExampleStore() {
	ctx := context.Background()
	store := memory.New(memory.Options{})
	key := dedupe.Key{Tenant: "acme", Provider: "stripe", ObjectType: "charge", Action: "succeeded", EventID: "evt_1"}

	for range 2 {
		r, err := dedupe.ClaimOne(ctx, store, 30*time.Second, key.Hash())
		if err != nil {
			panic(err)
		}
		fmt.Println(key, r.Status)
		if r.Status == dedupe.New {
			// ... store the event durably, then:
			if err := store.Commit(ctx, 168*time.Hour, r.Lease); err != nil {
				panic(err)
			}
		}
	}
	// Output:
	// acme/stripe/charge/succeeded/evt_1 new
	// acme/stripe/charge/succeeded/evt_1 duplicate
}

func ExampleMiddleware() {
	webhookID := func(r *http.Request) (dedupe.Key, error) {
		id := r.Header.Get("Webhook-Id")
		if id == "" {
			return dedupe.Key{}, errors.New("missing webhook-id")
		}
		return dedupe.Key{Provider: "standard", EventID: id}, nil
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted) // the event is durable
	})
	h := dedupe.Middleware(memory.New(memory.Options{}), webhookID, dedupe.MiddlewareOptions{})(handler)

	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/in/standard", strings.NewReader(`{"type":"ping"}`))
		req.Header.Set("Webhook-Id", "msg_1")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%d replayed=%q\n", rec.Code, rec.Header().Get("Idempotent-Replayed"))
	}
	// Output:
	// 202 replayed=""
	// 200 replayed="true"
}
