package sqlite_test

import (
	"strconv"
	"testing"
)

// BenchmarkAcceptDuplicates accepts batches of 64 events of which half
// are duplicates of events already stored, as a provider's retries send
// them.
func BenchmarkAcceptDuplicates(b *testing.B) {
	s := benchStore(b)
	prefill(b, s, "old", 20_000)
	old := benchItems("old", 20_000)
	next := 0
	for b.Loop() {
		items := benchItems("e"+strconv.Itoa(next)+"-", 64)
		copy(items[32:], old[(next*32)%20_000:])
		if _, err := s.Accept(b.Context(), items); err != nil {
			b.Fatal(err)
		}
		next++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(next*64), "ns/event")
}
