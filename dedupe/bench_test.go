package dedupe_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/memory"
)

var benchKey = dedupe.Key{Tenant: "acme", Provider: "stripe", ObjectType: "charge", Action: "succeeded", EventID: "evt_1NirD82eZvKYlo2CIvbtLWuY"}

func BenchmarkKeyHash(b *testing.B) {
	b.ReportAllocs()
	var h dedupe.Hash
	for b.Loop() {
		h = benchKey.Hash()
	}
	_ = h
}

// BenchmarkMemoryClaim measures what the front door does per event: hash
// the key and claim it, for a key never seen and for a committed one.
func BenchmarkMemoryClaim(b *testing.B) {
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		store := memory.New(memory.Options{})
		ctx := b.Context()
		k := benchKey
		i := 0
		for b.Loop() {
			i++
			k.EventID = strconv.Itoa(i)
			if r, err := dedupe.ClaimOne(ctx, store, time.Minute, k.Hash()); err != nil || r.Status != dedupe.New {
				b.Fatalf("%+v %v", r, err)
			}
		}
	})
	b.Run("duplicate", func(b *testing.B) {
		b.ReportAllocs()
		store := memory.New(memory.Options{})
		ctx := b.Context()
		r, err := dedupe.ClaimOne(ctx, store, time.Minute, benchKey.Hash())
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Commit(ctx, time.Hour, r.Lease); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if r, err := dedupe.ClaimOne(ctx, store, time.Minute, benchKey.Hash()); err != nil || r.Status != dedupe.Duplicate {
				b.Fatalf("%+v %v", r, err)
			}
		}
	})
}
