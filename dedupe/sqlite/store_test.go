package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/dedupe/sqlite"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	dedupetest.Exercise(t, func(t *testing.T, clock *dedupetest.Clock) dedupe.Store {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "dedupe.db"), sqlite.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, dedupetest.Features{})
}
