package redis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/redis"
)

// Two deliveries of one Stripe event through a Redis store shared by the
// gateway's nodes. When Redis cannot answer, the caller falls back on its
// database instead of guessing. (It needs a Redis server, so it is
// compiled but not run by go test.)
func Example() {
	store, err := redis.Open("redis://127.0.0.1:6379/0", redis.Options{Prefix: "hookgate:example"})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	ctx := context.Background()
	h := dedupe.Key{Provider: "stripe", ObjectType: "charge", Action: "succeeded", EventID: "evt_1"}.Hash()
	first, err := dedupe.ClaimOne(ctx, store, time.Minute, h)
	if errors.Is(err, dedupe.ErrUnavailable) {
		fmt.Println("Redis is down: let the database decide")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first delivery:", first.Status)

	// ... the event is stored durably ...
	if err := store.Commit(ctx, 168*time.Hour, first.Lease); err != nil {
		log.Fatal(err)
	}
	retry, err := dedupe.ClaimOne(ctx, store, time.Minute, h)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("provider retry:", retry.Status)
}
