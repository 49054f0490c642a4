package spool_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/spool"
)

// BenchmarkPutDiskUse spools small events (a 20-byte payload and one
// header, as item makes them), batch to a Put as the committer hands
// them over, and reports the disk they take: what a Put appends to the
// WAL, per event (wal-B/event, measured across each Put: the background
// checkpoint copies the WAL into the database file and lets it start over,
// so the WAL's size is bounded by what is appended between two
// checkpoints), the WAL's largest size seen (wal-max-B), and what the
// database file holds per event kept (db-B/event, after Close's last
// checkpoint).
//
//	go test -run '^$' -bench BenchmarkPutDiskUse -benchtime 2000x ./internal/spool/
func BenchmarkPutDiskUse(b *testing.B) {
	for _, batch := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "spool.db")
			s, err := spool.Open(b.Context(), path, spool.Options{})
			if err != nil {
				b.Fatal(err)
			}
			walSize := func() int64 {
				fi, err := os.Stat(path + "-wal")
				if err != nil {
					return 0
				}
				return fi.Size()
			}
			var appended, events, largest int64
			items := make([]inbox.Item, 0, batch)
			for i := range b.N {
				items = append(items, item(fmt.Sprintf("evt_%d", i)))
				if len(items) < batch && i < b.N-1 {
					continue
				}
				before := walSize()
				if _, err := s.Put(b.Context(), items); err != nil {
					b.Fatal(err)
				}
				// A Put that found the WAL started over (after a
				// checkpoint) cannot be measured across.
				if after := walSize(); after > before {
					appended += after - before
					events += int64(len(items))
					largest = max(largest, after)
				}
				items = items[:0]
			}
			b.StopTimer()
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			if events > 0 {
				b.ReportMetric(float64(appended)/float64(events), "wal-B/event")
			}
			b.ReportMetric(float64(largest), "wal-max-B")
			b.ReportMetric(float64(fi.Size())/float64(b.N), "db-B/event")
		})
	}
}
