package sqlite_test

import (
	"testing"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/inboxtest"
)

func TestReconciliations(t *testing.T) {
	t.Parallel()
	inboxtest.ExerciseReconciliations(t, func(t *testing.T, clock *inboxtest.Clock) inbox.Store {
		return open(t, clock)
	})
}
