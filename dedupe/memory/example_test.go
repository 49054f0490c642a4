package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/dedupe/memory"
)

// Sweep frees the keys whose window has ended; the store never runs it by
// itself.
func ExampleStore_Sweep() {
	ctx := context.Background()
	clock := dedupetest.NewClock(time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC))
	store := memory.New(memory.Options{Now: clock.Now})

	rs, err := store.Claim(ctx, time.Minute, dedupe.Key{EventID: "a"}.Hash(), dedupe.Key{EventID: "b"}.Hash())
	if err != nil {
		panic(err)
	}
	if err := store.Commit(ctx, time.Hour, rs[0].Lease); err != nil {
		panic(err)
	}

	clock.Advance(30 * time.Minute)
	n, _ := store.Sweep(ctx)
	fmt.Println("after 30m:", n, "removed") // b's lease has ended
	clock.Advance(30 * time.Minute)
	n, _ = store.Sweep(ctx)
	fmt.Println("after 1h:", n, "removed") // a's window has ended
	// Output:
	// after 30m: 1 removed
	// after 1h: 1 removed
}
