package memory_test

import (
	"testing"

	"github.com/hookgate/hookgate/dedupe"
	"github.com/hookgate/hookgate/dedupe/dedupetest"
	"github.com/hookgate/hookgate/dedupe/memory"
)

func TestStore(t *testing.T) {
	t.Parallel()
	dedupetest.Exercise(t, func(t *testing.T, clock *dedupetest.Clock) dedupe.Store {
		return memory.New(memory.Options{Now: clock.Now})
	}, dedupetest.Features{})
}
